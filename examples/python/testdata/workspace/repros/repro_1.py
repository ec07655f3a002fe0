# A reproducer as ai-triager writes them: prints what it saw, writes a file.
import os
import pathlib

pathlib.Path("repros/out_1.txt").write_text("reproduced\n")
print("sum:", 1 + 1)
print("token visible:", "GITHUB_TOKEN" in os.environ)
