"""Leases on an embedded store's folder, so that several processes can share one data directory.

Neither embedded engine guards its files against another process on its own: qdrant-client's local mode
reads every collection before it takes its lock file, and Qdrant Edge reads (and cleans up) a shard's
segments before it locks the shard's write-ahead log. Two processes opening one folder at once could
therefore read a segment the other was rewriting, or remove files the other was writing, and lose chunks.
So every open of an embedded store first takes :class:`FolderLock`, an exclusive OS lock (``portalocker``:
``flock`` on POSIX, ``LockFileEx`` on Windows) on ``.rags-expert-lock`` in the store's folder, and holds it
until the store is flushed and closed. A process holds a store only while it uses it:

* :func:`open_waiting` takes the folder lock and opens the store, retrying while another process holds
  the folder, for up to ``store.lock_wait_s``; then a :class:`StoreBusyError` names the holder (from a small
  holder file, ``.rags-expert-holder``: its command and pid; the file only informs, the OS lock decides) and
  what to do. A waiting process leaves a ``.rags-expert-want-<pid>-<token>`` file and holds an OS lock on it
  while it waits; a process about to open lets such a waiter in first. A want file counts only while its lock
  is held: the lock dies with its process, so a waiter killed while waiting costs nothing, whatever its pid
  looks like from here (pid 1 in a container, a reused pid); the file is removed by whoever finds it unlocked
  and older than :data:`STALE_WANT_S`.
* :class:`Lease` is the lock every store call holds. When the last call returns, the store is released
  at once if another process wants the folder, else after ``store.idle_release_s`` without a call; a
  watcher thread checks for waiters meanwhile. So ``ingest`` gives the folder up between two batches
  while an ``ask`` waits, and a long-lived host never holds it while idle. A process that opens the store
  after another one wrote reads what the other one flushed: nothing is cached across a release.

Opening costs ~50 ms (Edge, 1k chunks) to ~90 ms (10k); qdrant-client's local mode loads every point:
~55 ms at 1k, ~0.84 s at 10k (``bench/shared_folder.py --open-cost``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

import portalocker

from rags_expert.retrieval.store import ClientStore, KnowledgeBaseError

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

log = logging.getLogger(__name__)
HOLDER = ".rags-expert-holder"
LOCK = ".rags-expert-lock"
WANT = ".rags-expert-want-"
POLL_S = 0.05
"""Seconds between two tries to open a busy folder (and between two looks for waiters)."""
STALE_WANT_S = 10.0
"""A want file found unlocked is removed once it is this old (younger, its waiter may be about to lock it)."""
_OWN_WANTS: set[str] = set()
"""The names of the want files this process holds now (a process never waits for itself)."""

T = TypeVar("T")


class StoreBusyError(KnowledgeBaseError):
    """Another process held the data folder for longer than ``store.lock_wait_s``."""


class FolderLock:
    """The exclusive OS lock on a store's folder, held from before its first file is read until it is closed.

    One per store object: the lock belongs to the open file, so two objects of one process exclude each
    other too. It is not re-entrant across objects and never blocks: :meth:`try_acquire` says whether it got it.
    """

    def __init__(self, root: Path) -> None:
        self.path = root / LOCK
        self._file: IO[str] | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock now."""
        return self._file is not None

    def try_acquire(self) -> bool:
        """Take the lock if no other process (or object) holds it; True if it is held now."""
        if self._file is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+")  # noqa: SIM115 - held open for as long as the store is
        try:
            portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
        except portalocker.exceptions.LockException:
            handle.close()
            return False
        self._file = handle
        return True

    def release(self) -> None:
        """Let the lock go (a no-op when it is not held)."""
        handle, self._file = self._file, None
        if handle is not None:
            try:
                portalocker.unlock(handle)
            finally:
                handle.close()


def process_label(argv: list[str] | None = None) -> str:
    """What this process is, for the holder file: ``rags-expert ingest``, or the program's name.

    Only the subcommand is taken from the command line (never its arguments: they may hold secrets).
    """
    argv = sys.argv if argv is None else argv
    prog = Path(argv[0]).name if argv and argv[0] else "python"
    if prog in ("rags-expert", "rags_expert") or Path(argv[0]).parent.name == "rags_expert":
        sub = next((a for a in argv[1:] if not a.startswith("-")), "")
        return f"rags-expert {sub}".strip() if re.fullmatch(r"[a-z][a-z-]{0,30}", sub) else "rags-expert"
    return prog if re.fullmatch(r"\w[\w.+-]{0,59}", prog) else "python"


def _alive(pid: int) -> bool:
    """Whether a process with this id runs (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def holder(root: Path) -> str | None:
    """``"rags-expert ingest, pid 1234"`` for the live process that wrote the holder file of ``root``, else None."""
    try:
        data = json.loads((root / HOLDER).read_text())
        pid, command = int(data["pid"]), str(data["command"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if pid == os.getpid() or not _alive(pid):
        return None
    return f"{command}, pid {pid}"


def write_holder(root: Path) -> None:
    """Record this process as the holder of ``root`` (best effort: it only informs a waiting process)."""
    tmp = root / f"{HOLDER}.{os.getpid()}"
    with contextlib.suppress(OSError):
        tmp.write_text(json.dumps({"pid": os.getpid(), "command": process_label()}))
        os.replace(tmp, root / HOLDER)


def clear_holder(root: Path) -> None:
    """Remove the holder file of ``root`` if this process wrote it."""
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        if int(json.loads((root / HOLDER).read_text())["pid"]) == os.getpid():
            (root / HOLDER).unlink()


def others_waiting(root: Path) -> bool:
    """Whether another process waits to open ``root`` now: one of its want files is locked by its waiter.

    An unlocked want file is a waiter that is gone (killed while waiting; or one that has not locked it yet):
    it does not count, and it is removed once older than :data:`STALE_WANT_S`.
    """
    try:
        names = [p for p in root.iterdir() if p.name.startswith(WANT) and p.name not in _OWN_WANTS]
    except OSError:
        return False
    return any(_waiting(path) for path in names)


def _waiting(path: Path) -> bool:
    """Whether the waiter of the want file ``path`` holds its lock (an unlocked, stale file is removed)."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below, after the lock is tried
    except OSError:
        return False  # gone meanwhile: its waiter got in or gave up
    try:
        try:
            portalocker.lock(handle, portalocker.LockFlags.SHARED | portalocker.LockFlags.NON_BLOCKING)
        except portalocker.exceptions.LockException:
            return True  # its waiter holds it
        stale = time.time() - os.fstat(handle.fileno()).st_mtime > STALE_WANT_S
        portalocker.unlock(handle)
    except OSError:
        return False
    finally:
        handle.close()
    if stale:
        with contextlib.suppress(OSError):
            path.unlink()
    return False


@contextlib.contextmanager
def wanting(root: Path) -> Iterator[Path]:
    """A want file in ``root``, locked by this process for as long as the block runs (best effort: a folder
    where it cannot be written only loses the waiter its turn). Yields the file's path."""
    path = root / f"{WANT}{os.getpid()}-{secrets.token_hex(4)}"
    handle: IO[bytes] | None = None
    _OWN_WANTS.add(path.name)
    try:
        with contextlib.suppress(OSError, portalocker.exceptions.LockException):
            handle = open(path, "wb")  # noqa: SIM115 - held open while waiting
            # blocking: only another process's look at the file (a moment) can hold its lock now
            portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE)
        yield path
    finally:
        if handle is not None:  # unlocked and closed first: Windows removes no open file
            with contextlib.suppress(OSError, portalocker.exceptions.LockException):
                portalocker.unlock(handle)
            handle.close()
        with contextlib.suppress(OSError):
            path.unlink()
        _OWN_WANTS.discard(path.name)


def busy_message(folder: Path, root: Path, wait_s: float) -> str:
    """The one line a process gets when the folder stayed busy: who holds it and what to do."""
    who = holder(root) or "another process"
    return (
        f"the data folder {folder} is in use by {who} and was still busy after {wait_s:g} s (store.lock_wait_s): "
        f"wait for it to finish, stop it, or use a Qdrant server (store.url)"
    )


def open_waiting(
    open_once: Callable[[], T],
    is_busy: Callable[[Exception], bool],
    lock: FolderLock,
    folder: Path,
    wait_s: float,
) -> T:
    """Take ``lock`` (if not held yet) and ``open_once()``, retried every :data:`POLL_S` while the folder is busy.

    Busy means another process holds ``lock``, or ``is_busy`` says the engine refused the folder (a process
    that is not rags-expert). A process already waiting for the folder goes first. After ``wait_s`` seconds
    :class:`StoreBusyError` names the holder of ``folder`` (the data directory the user knows). The holder
    file is written on success. The lock stays held on success and on failure: the store releases it when
    it closes (or at once when nothing of it is open).
    """
    root = lock.path.parent
    deadline = time.monotonic() + wait_s
    while not lock.held and others_waiting(root) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    want: Path | None = None
    with contextlib.ExitStack() as waits:
        while True:
            cause: Exception | None = None
            if lock.try_acquire():
                try:
                    opened = open_once()
                except Exception as exc:
                    if not is_busy(exc):
                        raise
                    cause = exc
                else:
                    write_holder(root)
                    return opened
            if time.monotonic() >= deadline:
                raise StoreBusyError(busy_message(folder, root, wait_s)) from cause
            if not want:  # the first busy try: say so until this open ends
                want = waits.enter_context(wanting(root))
            time.sleep(POLL_S)


class Lease:
    """The lock around one store's calls; the store is released when idle or wanted by another process.

    ``is_open`` tells whether the store holds its folder now, ``release`` closes it (the store reopens on
    its next call). ``root`` None (a Qdrant server) or ``idle_s`` None: never released by the lease.
    """

    def __init__(
        self,
        release: Callable[[], None],
        is_open: Callable[[], bool],
        root: Path | None,
        idle_s: float | None,
    ) -> None:
        self._lock = threading.RLock()
        self._release, self._is_open = release, is_open
        self.root, self.idle_s = root, idle_s
        self._depth = 0
        self._used = 0.0
        self._watching = False

    def __enter__(self) -> Lease:
        self._lock.acquire()
        self._depth += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self._depth -= 1
            if self._depth == 0:
                self._used = time.monotonic()
                self._after_use()
        finally:
            self._lock.release()

    def release_now(self) -> None:
        """Flush and close the store at once (its next call reopens it and reads what is on disk)."""
        with self._lock:
            if self._is_open():
                self._release()

    def _after_use(self) -> None:
        """Release now if another process waits (or no idle time is allowed), else watch until idle."""
        if self.root is None or self.idle_s is None or not self._is_open():
            return
        if self.idle_s <= 0 or others_waiting(self.root):
            self._release()
        elif not self._watching:
            self._watching = True
            threading.Thread(target=self._watch, name="rags-expert-lease", daemon=True).start()

    def _watch(self) -> None:
        """Release the store once it is idle for ``idle_s`` or another process waits for it."""
        assert self.root is not None and self.idle_s is not None
        while True:
            time.sleep(min(POLL_S * 2, self.idle_s))
            with self._lock:
                if self._is_open() and time.monotonic() - self._used < self.idle_s and not others_waiting(self.root):
                    continue
                self._watching = False  # under the lock: the next use starts a new watcher
                if self._is_open():
                    try:
                        self._release()
                    except Exception as exc:  # noqa: BLE001 - the next call reopens; say why this close failed
                        log.warning("releasing the store in %s failed: %s", self.root, type(exc).__name__)
                return


def _folder_locked(exc: Exception) -> bool:
    """Whether qdrant-client's local mode refused the folder because another process has it open."""
    return isinstance(exc, RuntimeError) and "already accessed by another instance" in str(exc)


class LocalClient:
    """qdrant-client's local mode in ``path``, opened on its first call and closed when its lease is released.

    Opening takes the folder's :class:`FolderLock` first (local mode reads every collection before it locks
    its own ``.lock`` file), waiting up to ``wait_s`` while another process holds it (:func:`open_waiting`);
    every attribute but these few is the open ``QdrantClient``'s. With ``local_wal`` each collection's SQLite
    store gets WAL and synchronous=NORMAL again on every opening (``ClientStore.prepare``).
    """

    def __init__(self, path: Path, wait_s: float, local_wal: bool) -> None:
        self.path, self.wait_s, self.local_wal = path, wait_s, local_wal
        self._opened: QdrantClient | None = None
        self._lock = FolderLock(path)

    def is_open(self) -> bool:
        """Whether the folder is open (this process holds its lock)."""
        return self._opened is not None

    def opened(self) -> QdrantClient:
        """The open client (opening it, waiting while the folder is busy)."""
        if self._opened is None:
            from qdrant_client import QdrantClient

            try:
                self._opened = open_waiting(
                    lambda: QdrantClient(path=str(self.path)), _folder_locked, self._lock, self.path, self.wait_s
                )
                if self.local_wal:
                    store = ClientStore(self._opened, server=False)
                    for collection in self._opened.get_collections().collections:
                        store.prepare(collection.name)
            except BaseException:
                self.close()
                raise
        return self._opened

    def collection_exists(self, name: str) -> bool:
        """Whether the collection exists; False without opening the folder (nor importing qdrant-client) when
        local mode's folder of that collection (``<path>/collection/<name>``) is absent: a question's lesson
        check on a data folder that never stored a lesson costs nothing (issue 54)."""
        if not (self.path / "collection" / name).is_dir():
            return False
        return self.opened().collection_exists(name)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.opened(), name)

    def close(self) -> None:
        """Close the client, then let the folder's lock go: the next call reopens it."""
        client, self._opened = self._opened, None
        try:
            if client is not None:
                client.close()
        finally:
            if self._lock.held:
                clear_holder(self.path)
            self._lock.release()
