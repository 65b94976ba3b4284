"""The failures a job can end with, each with its own exit status and a message that says what
to do. `cli.main` prints the message (prefixed `onramp-train: error:`) and exits with the status,
so the job wrapper and the job page can tell them apart."""


class TrainError(Exception):
    """A failure the user can act on; `exit_code` tells the kinds apart."""

    exit_code = 1
    kind = "error"


class SpecError(TrainError):
    exit_code = 2
    kind = "spec"


class ModelNotFound(TrainError):
    exit_code = 3
    kind = "model-not-found"


class DataError(TrainError):
    exit_code = 4
    kind = "data"


class OutOfMemory(TrainError):
    exit_code = 5
    kind = "out-of-memory"


class CommError(TrainError):
    exit_code = 6
    kind = "communication"


class DeviceError(TrainError):
    exit_code = 7
    kind = "device"
