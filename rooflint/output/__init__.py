"""What users read: terminal tables and the live display, gate Markdown and JUnit,
roofline plots, and the guard on which files a command may write."""
