"""GPT-2 small from its config (no download), trained 8 steps on random tokens with Hugging
Face's Trainer in bf16: a program whose model code is all in an installed package.

    rooflint profile -- python examples/apps/hf_trainer.py

Each kernel's line is the model's (``modeling_gpt2.py:697 in GPT2LMHeadModel.forward``),
with the program's line that reached it (``from hf_trainer.py:29``).
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")      # nothing to download: the model is built here
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class Tokens(torch.utils.data.Dataset):
    def __len__(self):
        return 1024

    def __getitem__(self, i):
        ids = torch.randint(0, 50257, (512,))
        return {"input_ids": ids, "labels": ids}


model = GPT2LMHeadModel(GPT2Config())
args = TrainingArguments(output_dir="/tmp/hf-out", max_steps=8, per_device_train_batch_size=8,
                         bf16=True, report_to=[], logging_steps=100, save_strategy="no",
                         dataloader_num_workers=0)
Trainer(model=model, args=args, train_dataset=Tokens()).train()
print("done")
