"""The decisions over documents: a measured family made into its result, two variants
compared, a baseline gated, typed numbers explained, a program's kernels chosen and the
upside of fixing each. Built on the pure core (analysis/) and the documents (formats/);
no GPU, no printing and no command here: measure/, output/ and commands/ sit above."""
