"""`onramp-train SPEC [--deepspeed ds_config.json] [--output-dir DIR]`.

Exit status: 0 done, 2 bad spec or launch, 3 model not found, 4 bad or missing data, 5 CUDA out
of memory, 6 ranks lost each other (NCCL, timeouts), 7 wrong device, 1 anything else. The last
line on stderr says why, prefixed `onramp-train: error:`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from . import spec
from .errors import SpecError, TrainError


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="onramp-train",
        description="Train what an Onramp job spec describes (Transformers + PEFT + DeepSpeed).",
    )
    p.add_argument("spec", type=Path, help="the job spec (TOML), as validated by jobspec")
    p.add_argument(
        "--deepspeed",
        type=Path,
        help="the ds_config.json jobspec generated for this spec (checked against the spec)",
    )
    p.add_argument(
        "--output-dir",
        type=Path,
        default=Path(os.environ.get("ONRAMP_OUTPUT_DIR", "out")),
        help="checkpoints and the final model or adapter (default: ./out)",
    )
    # The DeepSpeed launcher passes each rank its local rank; torchrun sets LOCAL_RANK instead.
    p.add_argument("--local_rank", "--local-rank", type=int, help=argparse.SUPPRESS)
    p.add_argument(
        "--print-plan",
        action="store_true",
        help="print what the spec asks (as JSON, with the ds_config) and exit",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    _prepare_environment()
    try:
        plan, derived_ds = spec.load(args.spec)
        if args.print_plan:
            print(json.dumps({"plan": plan.export(), "ds_config": derived_ds}, indent=2))
            return 0
        ds_file = _read_ds(args.deepspeed) if args.deepspeed else None
        from . import train

        train.preflight(plan, ds_file, derived_ds)
        train.run(plan, derived_ds, args.output_dir)
        return 0
    except TrainError as e:
        rank = os.environ.get("RANK")
        where = f" (rank {rank})" if rank not in (None, "0") else ""
        print(f"onramp-train: error{where}: [{e.kind}] {e}", file=sys.stderr, flush=True)
        return e.exit_code


def _read_ds(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise SpecError(f"cannot read the DeepSpeed config {path}: {e}") from e


def _prepare_environment() -> None:
    """DeepSpeed picks its accelerator at import and JIT-builds ops with ninja and c++: on a
    machine without CUDA it must be told `cpu`, and the environment's bin/ (ninja) must be on
    PATH for this process and every child."""
    bin_dir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if bin_dir not in path.split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + path
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if "DS_ACCELERATOR" not in os.environ:
        import torch

        if not torch.cuda.is_available():
            os.environ["DS_ACCELERATOR"] = "cpu"
