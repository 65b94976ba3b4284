"""onramp-train: the program every non-tiny Onramp job runs.

It reads the job spec (the TOML the user wrote, validated by jobspec), derives the run exactly as
jobspec does (`spec.py`), resolves the model and the data (`models.py`, `data.py`) and hands the
loop to Hugging Face's Trainer with PEFT and DeepSpeed (`train.py`), printing the same JSON-lines
metrics as `onramp-runner tiny-train` (`metrics.py`).
"""

__version__ = "0.1.0"
