"""The import path of the job function before workers/ was split by process.

Jobs queued or dead-lettered by earlier versions name `workers.job.deliver`; RQ imports
that path when it runs them, so it stays valid.
"""

from workers.runtime.deliver import deliver

__all__ = ["deliver"]
