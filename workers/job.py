"""The import paths stored in every event's job (`app/jobhash.py`).

RQ imports `workers.job.deliver` when it runs a job and `workers.job.on_failure` when one
is abandoned. Jobs queued or dead-lettered by any version name these paths, so they stay
valid wherever the code behind them moves.
"""

from workers.runtime.deliver import deliver
from workers.runtime.retries import on_failure

__all__ = ["deliver", "on_failure"]
