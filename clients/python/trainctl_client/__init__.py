"""trainctl_client: a small Python client of the trainctl job API, for pipelines and scripts:
jobs (Client.submit, wait, logs...), their shipped working directories (submit(spec,
workdir=DIR); the packing is in trainctl_client.workdir) and project secrets (set_secret...).

It needs Debian's python3-grpcio and python3-protobuf, and the stubs generated from
proto/trainctl/v1/*.proto (the build writes them to build/clients/python/gen). They are found on
sys.path, or in the directory $TRAINCTL_PYTHON_STUBS names, which is put first on sys.path when
this package is imported.
"""

import os
import sys

_stubs = os.environ.get("TRAINCTL_PYTHON_STUBS")
if _stubs and os.path.abspath(_stubs) not in sys.path:
    sys.path.insert(0, os.path.abspath(_stubs))

# pylint: disable=wrong-import-position
from trainctl_client.client import TERMINAL_STATES, Client, state_name  # noqa: E402
from trainctl_client.workdir import WorkdirError  # noqa: E402

__all__ = ["Client", "TERMINAL_STATES", "WorkdirError", "state_name"]
