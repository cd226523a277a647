"""Files and directories of `make run` under `var/` that only their owner may read: the
development credentials, the stack's secrets, the development private keys, Redis's data.

Private from the moment they exist, whatever the umask: a file is created 600 (`os.open`
with the mode, never written with the umask's mode and tightened afterwards, which leaves a
moment where anyone may open it and keep reading), under a temporary name, then renamed
over the old one, so a reader never sees half a file; a directory is made 700, and made so
again if an older run left it open.
"""

from __future__ import annotations

import os
from pathlib import Path

FILE_MODE = 0o600
DIRECTORY_MODE = 0o700
# For a process writing under a private directory (the development Redis): its files too.
UMASK = 0o077


def private_dir(directory: Path) -> Path:
    """`directory` (and each missing parent) made 700; an existing one set to 700."""
    for missing in reversed([d for d in (directory, *directory.parents) if not d.exists()]):
        missing.mkdir(mode=DIRECTORY_MODE, exist_ok=True)  # the umask only takes bits away
    directory.chmod(DIRECTORY_MODE)
    return directory


def write_private(path: Path, data: bytes | str) -> Path:
    """Replace `path` with `data`, in a file that was 600 from its creation, its directory
    700."""
    private_dir(path.parent)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.unlink(missing_ok=True)  # O_EXCL: neither a stale file nor a planted link
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    with os.fdopen(descriptor, "wb") as file:
        os.fchmod(file.fileno(), FILE_MODE)  # a umask of 077 or more would leave it 000
        file.write(data.encode() if isinstance(data, str) else data)
    os.replace(temporary, path)
    return path
