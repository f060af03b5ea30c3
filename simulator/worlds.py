"""The namespaces' worlds: which exist, which are in memory, and their life cycle.

A namespace other than `default` is a directory `<data dir>/namespaces/<name>/` holding its
store, its saved states (`snapshots/`) and `namespace.json` (written last on creation: the
directory is a namespace once that file exists). Its world (every service, built by the
composition root's factory from the same parts as `default`'s) is built on the first request that
needs it and unloaded again when unused: after `namespace_unload_seconds` without a request, or
when more than `namespaces_in_memory` worlds are loaded (the least recently used first). Nothing
is read at start-up but the directory's secret: a server with a thousand namespaces on disk
starts as fast as one with none.

Names reach the file system only after `check_name` (the pattern has no `/`, `.` or `..`).
Without a data dir (tests), namespaces live in memory and are never unloaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import logging
import os
import secrets
import shutil
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from simulator.domain.catalog import Catalog
from simulator.domain.errors import ApiError
from simulator.domain.namespaces import (
    DEFAULT,
    SECRET_FILE,
    check_name,
    key_rows,
    keyed_for,
    valid_name,
)
from simulator.domain.placement import owner as worker_of
from simulator.jsonio import dumps, loads
from simulator.settings import Settings
from simulator.store.files import read_or_make_secret
from simulator.team.limits import CreationBounds
from simulator.team.mode import TeamMode

log = logging.getLogger(__name__)

META = "namespace.json"
DELETED = ".deleted-"  # a namespace being deleted, renamed out of the way first
DELETE_WAIT_SECONDS = 15.0
BUSY_RETRY_SECONDS = 1

BuildWorld = Callable[[str, Path | None, Catalog], web.Application]
# The requests a world is handling (the composition root reads its key: this module is imported
# by the keys' module, for their types, so it does not import them).
InFlight = Callable[[web.Application], Iterable["asyncio.Task[Any]"]]


@dataclass(slots=True)
class Namespace:
    name: str
    created_at: float  # wall-clock seconds (a namespace is the server's, not a simulated thing)
    idle_seconds: int | None  # deleted after this long without a request; None: kept
    last_used_at: float
    owner: str | None = None  # team mode: the owner that made it (None: the admin, local mode)
    expires_at: float | None = None  # wall-clock; deleted then (a maximum age, an expiry)

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def view(self, *, loaded: bool) -> dict[str, Any]:
        view = {
            "name": self.name,
            "createdAt": _iso(self.created_at),
            "idleSeconds": self.idle_seconds,
            "lastUsedAt": _iso(self.last_used_at),
            "loaded": loaded,
        }
        if self.owner is not None:  # team mode's (local mode's answers are as they were)
            view["owner"] = self.owner
        if self.expires_at is not None:
            view["expiresAt"] = _iso(self.expires_at)
        return view


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


class Worlds:
    """The registry of the namespaces other than `default` (whose world is the front's own)."""

    def __init__(
        self,
        settings: Settings,
        catalog: Catalog,
        build: BuildWorld,
        in_flight: InFlight,
        *,
        wall: Callable[[], float] | None = None,
    ) -> None:
        self._root = settings.data_dir / "namespaces" if settings.data_dir else None
        self._catalog = catalog
        self._build = build
        self._in_flight = in_flight
        # Looked up at each call (not bound here), so that freezegun's patched time reaches it.
        self._wall = wall or (lambda: time.time())
        self._fsync = settings.fsync
        self.in_memory_limit = settings.namespaces_in_memory
        self.unload_seconds = settings.namespace_unload_seconds
        self._sweep_every = settings.tick_seconds and min(30.0, self.unload_seconds / 2)
        self._seed = settings.seed
        self._loaded: OrderedDict[str, web.Application] = OrderedDict()  # least recent first
        self._active: dict[str, int] = {}  # requests being handled, per loaded world
        self._locks: dict[str, _Lock] = {}
        self._loading = 0  # worlds being started
        self._secret: bytes | None = settings.namespace_secret  # given: one of several workers
        self._catalogs: dict[str, Catalog] = {}
        # What is known of each namespace (all of them without a data dir; on disk, those read
        # since start: the expiry index is filled by a scan in the background).
        self._known: dict[str, Namespace] = {}
        self._scanned = self._root is None
        self._worker = settings.worker
        self.bounds = CreationBounds(
            settings.max_namespaces, settings.namespace_creations_per_minute
        )
        self.team: TeamMode | None = None  # team mode's owners, tokens and audit (app.py)
        self._creating = asyncio.Lock()  # one creation at a time: the bounds count, then make
        self._timers: dict[str, asyncio.TimerHandle] = {}  # expiries, by name
        self._expiring: set[asyncio.Future[None]] = set()
        self._on_disk: set[str] | None = None  # see `_existing`

    # -- the request path ---------------------------------------------------------------------

    async def enter(self, name: str) -> web.Application | None:
        """The world of `name`, loaded if it was not, counted as in use until `leave`; None if
        there is no such namespace; 503 `service_unavailable` when it is not loaded and every
        world in memory is in use."""
        known = self._known.get(name)
        if known is not None and known.expires_at is not None and known.expired(self._wall()):
            return None  # due: its timer deletes it
        world = self._loaded.get(name)
        if world is None:
            return await self._load(name)  # counted as in use by the load itself
        self._loaded.move_to_end(name)
        self._use(name)
        return world

    def _use(self, name: str) -> None:
        self._active[name] = self._active.get(name, 0) + 1
        known = self._known.get(name)
        if known is not None:
            known.last_used_at = self._wall()

    def leave(self, name: str) -> None:
        left = self._active.get(name, 1) - 1
        if left:
            self._active[name] = left
        else:
            self._active.pop(name, None)

    def now(self) -> float:
        """The wall clock namespaces' lifetimes are read on."""
        return self._wall()

    def loaded(self) -> list[web.Application]:
        return list(self._loaded.values())

    # -- management ---------------------------------------------------------------------------

    async def create(
        self,
        name: str,
        idle_seconds: int | None,
        *,
        owner: str | None = None,
        admit: Callable[[], None] | None = None,
        expires_at: float | None = None,
        quota: int | None = None,
    ) -> tuple[Namespace, bool]:
        """(the namespace, True) once made; (the existing one, False) if it exists: unchanged.
        A new one must fit the server's bounds and pass `admit` (an owner's quota), which
        raise; the count is of the namespaces on disk, so a restart cannot make it drift.
        Behind --workers in team mode the team's ledger counts instead (the owner's `quota`)."""
        check_name(name)
        if name == DEFAULT:
            return self._default(), False
        if not self.owns(name):
            assert self._worker is not None
            index, count = self._worker
            raise ApiError(
                "forbidden",
                f"Namespace {name!r} belongs to worker {worker_of(name, count)} of this server, "
                f"not to this one ({index}): create it through the server's public port.",
                param="name",
            )
        async with self._creating, self._locked(name):
            existing = self.find(name)
            if existing is not None:
                return existing, False
            if self._find_any(name) is not None:
                await self._remove(name)  # expired, its timer not yet run: gone before reuse
            now = self._wall()
            ledger = self.team.ledger if self.team is not None else None
            if ledger is not None:
                await asyncio.to_thread(ledger.reserve, name, owner, quota, self.bounds, now)
            else:
                self.bounds.check(now, len(self._existing()))
                if admit is not None:
                    admit()
            namespace = Namespace(name, now, idle_seconds, now, owner, expires_at)
            if self._root is not None:
                try:
                    (self._root / name).mkdir(parents=True, exist_ok=True)
                    self._write_meta(namespace)
                except OSError:
                    if ledger is not None:
                        ledger.release(name)
                    raise
            self._known[name] = namespace
            self._existing().add(name)
            self.bounds.made(now)
            self._arm(namespace)
            return namespace, True

    def owns(self, name: str) -> bool:
        """Whether `name` is placed on this server (always, unless it is one worker of several:
        then a name placed on a sibling never exists here, whoever reaches the private port)."""
        return self._worker is None or worker_of(name, self._worker[1]) == self._worker[0]

    def find(self, name: str) -> Namespace | None:
        """Namespace `name`, None if there is none or it is past its expiry."""
        namespace = self._find_any(name)
        if namespace is not None and namespace.expired(self._wall()):
            return None
        return namespace

    def _find_any(self, name: str) -> Namespace | None:
        if name == DEFAULT:
            return self._default()
        if not valid_name(name) or not self.owns(name):
            return None
        known = self._known.get(name)
        if known is not None or self._root is None:
            return known
        namespace = self._read_meta(name)
        if namespace is not None:
            self._known[name] = namespace
        return namespace

    def describe(self, namespace: Namespace, *, keys: bool) -> dict[str, Any]:
        view = namespace.view(loaded=namespace.name == DEFAULT or namespace.name in self._loaded)
        if namespace.name == DEFAULT:
            view.update(createdAt=None, lastUsedAt=None)
        if keys:
            view["keys"] = key_rows(self.catalog_of(namespace.name))
        return view

    def names(self) -> list[str]:
        """Every namespace, `default` first, then by name."""
        if self._root is None:
            names = list(self._known)
        else:
            names = []
            with contextlib.suppress(FileNotFoundError):
                names = [
                    entry.name
                    for entry in os.scandir(self._root)
                    if valid_name(entry.name)
                    and self.owns(entry.name)
                    and os.path.isfile(Path(entry.path) / META)
                ]
        return [DEFAULT, *sorted(names)]

    def owned_by(self, owner: str) -> list[Namespace]:
        """The namespaces `owner` made (team mode), by name."""
        known = self._known
        found = (known.get(name) or self.find(name) for name in sorted(self._existing()))
        return [n for n in found if n is not None and n.owner == owner]

    def owned_count(self, owner: str) -> int:
        """How many namespaces `owner` holds on the whole server."""
        if self.team is not None and self.team.ledger is not None:
            return self.team.ledger.count(owner)
        return len(self.owned_by(owner))

    def _existing(self) -> set[str]:
        """The namespaces besides `default`, for counting: read from the disk once (a scan costs
        ~50 ms at a few hundred on a busy machine), then kept by `create` and `_remove`, so a
        restart counts afresh from the disk."""
        if self._on_disk is None:
            self._on_disk = set(self.names()[1:])
        return self._on_disk

    async def delete(self, name: str) -> bool:
        """Delete namespace `name` (not `default`): its world stopped, its directory removed.
        False if there is none. The calling request, if it is one of the namespace's, is not
        waited for."""
        async with self._locked(name):
            return await self._remove(name)

    async def _remove(self, name: str) -> bool:
        if self._find_any(name) is None:
            return False
        timer = self._timers.pop(name, None)
        if timer is not None:
            timer.cancel()
        world = self._loaded.pop(name, None)
        self._known.pop(name, None)
        if self._on_disk is not None:
            self._on_disk.discard(name)
        self._catalogs.pop(name, None)
        if world is not None:
            await self._stop(world, wait=True)
        if self._root is not None:
            directory = self._root / name
            graveyard = self._root / f"{DELETED}{name}-{secrets.token_hex(4)}"
            directory.rename(graveyard)  # atomic: from here the name is free
        if self.team is not None and self.team.ledger is not None:
            self.team.ledger.release(name)
            await asyncio.to_thread(shutil.rmtree, graveyard, True)
        return True

    async def extend(self, namespace: Namespace, expires_at: float) -> Namespace:
        """Move `namespace`'s expiry to `expires_at` (kept on disk at once)."""
        async with self._locked(namespace.name):
            namespace.expires_at = expires_at
            if self._root is not None:
                self._write_meta(namespace)
            self._arm(namespace)
        return namespace

    def _arm(self, namespace: Namespace) -> None:
        """Delete `namespace` at its expiry, to the event loop's precision (not the sweep's)."""
        old = self._timers.pop(namespace.name, None)
        if old is not None:
            old.cancel()
        if namespace.expires_at is None:
            return
        name = namespace.name
        delay = max(0.0, namespace.expires_at - self._wall())

        def due() -> None:
            self._timers.pop(name, None)
            task = asyncio.ensure_future(self._expire(name))
            self._expiring.add(task)
            task.add_done_callback(self._expiring.discard)

        self._timers[name] = asyncio.get_running_loop().call_later(delay, due)

    async def _expire(self, name: str) -> None:
        namespace = self._find_any(name)
        if namespace is not None and namespace.expired(self._wall()):
            log.info("namespace %s expired: deleted", name)
            await self.delete(name)

    def catalog_of(self, name: str) -> Catalog:
        """Namespace `name`'s catalog (its keys derived once, then kept while it exists)."""
        catalog = self._catalogs.get(name)
        if catalog is None:
            catalog = self._catalogs[name] = keyed_for(
                self._catalog, self._namespace_secret(), name
            )
        return catalog

    # -- loading and unloading ----------------------------------------------------------------

    async def _load(self, name: str) -> web.Application | None:
        """Load `name`'s world, counted as in use before anything else can unload it (issue 31:
        a world loaded then unloaded to make room answered on a closed store)."""
        if self.find(name) is None:
            return None  # before any lock: an unknown name leaves nothing behind
        await self._make_room()
        self._loading += 1  # a place held while the world starts (other loads see it taken)
        try:
            async with self._locked(name):
                world = self._loaded.get(name)
                if world is None:
                    if self.find(name) is None:
                        return None  # deleted while we waited
                    directory = self._root / name if self._root is not None else None
                    try:
                        world = self._build(name, directory, self.catalog_of(name))
                        await world.startup()
                    except OSError as exc:
                        if exc.errno not in (errno.EMFILE, errno.ENFILE):
                            raise
                        log.warning("namespace %s not loaded: %s", name, exc.strerror)
                        raise busy("the server is out of open files") from None
                    self._loaded[name] = world
                else:
                    self._loaded.move_to_end(name)
                self._use(name)
                return world
        finally:
            self._loading -= 1

    async def _make_room(self) -> None:
        """Unload the least recently used idle worlds until one more fits under the cap; 503
        when every world in memory is in use (streams, long requests): a world is never
        unloaded under a request."""
        if self._root is None:
            return  # in memory: unloading would lose the world
        while len(self._loaded) + self._loading >= self.in_memory_limit:
            idle = next((n for n in self._loaded if n not in self._active), None)
            if idle is None:
                raise busy(f"all {self.in_memory_limit} namespaces in memory are in use")
            await self._unload(idle)

    async def _unload(self, name: str) -> None:
        async with self._locked(name):
            if name in self._active or name not in self._loaded:
                return  # used again meanwhile
            world = self._loaded.pop(name)
            await self._stop(world, wait=False)
            known = self._known.get(name)
            if known is not None:
                self._write_meta(known)  # keeps its last use for the idle lifetime

    async def _stop(self, world: web.Application, *, wait: bool) -> None:
        await world.shutdown()  # ends its event and request-log streams
        if wait:
            me = asyncio.current_task()
            running = [task for task in self._in_flight(world) if task is not me]
            if running:
                await asyncio.wait(running, timeout=DELETE_WAIT_SECONDS)
        await world.cleanup()  # stops its background, writes and closes its store

    async def sweep(self) -> None:
        """Unload worlds unused for `unload_seconds`; delete namespaces past their idle
        lifetime."""
        now = self._wall()
        for name, namespace in list(self._known.items()):
            if name in self._active:
                continue
            idle = now - namespace.last_used_at
            if namespace.expired(now):
                log.info("namespace %s expired: deleted", name)
                await self.delete(name)
            elif namespace.idle_seconds is not None and idle >= namespace.idle_seconds:
                log.info("namespace %s unused for %d s: deleted", name, idle)
                await self.delete(name)
            elif name in self._loaded and idle >= self.unload_seconds:
                await self._unload(name)

    async def lifecycle(self, app: web.Application) -> AsyncIterator[None]:
        """aiohttp cleanup context: the sweeper while the server runs; every world stopped at
        the end (their stores written and closed)."""
        if self.team is not None and self.team.ledger is not None:
            # What a crash between counting and making (or deleting and uncounting) left over.
            present = {n: getattr(self._read_meta(n), "owner", None) for n in self.names()[1:]}
            self.team.ledger.reconcile(self.owns, present)
        task = asyncio.create_task(self._sweep_forever()) if self._sweep_every else None
        yield
        for timer in self._timers.values():
            timer.cancel()
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for name in list(self._loaded):
            world = self._loaded.pop(name)
            await self._stop(world, wait=False)
            known = self._known.get(name)
            if known is not None and self._root is not None:
                self._write_meta(known)

    async def _sweep_forever(self) -> None:
        while True:
            # The first scan waits a sweep's interval too: at start-up its thread would contend
            # for the interpreter with the server getting ready.
            await asyncio.sleep(self._sweep_every)
            if not self._scanned:
                await asyncio.to_thread(self._scan)
                for namespace in list(self._known.values()):
                    if namespace.expires_at is not None and namespace.name not in self._timers:
                        self._arm(namespace)
            try:
                await self.sweep()
            except Exception:  # the sweeper must outlive one bad directory
                log.exception("namespace sweep failed")

    def _scan(self) -> None:
        """Read every namespace's `namespace.json` (in a thread, after start-up) so that the idle
        lifetimes of namespaces nobody loads since the start run out too; finish deletions a
        crash interrupted."""
        assert self._root is not None
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(self._root):
                if entry.name.startswith(DELETED):
                    shutil.rmtree(entry.path, ignore_errors=True)
                elif valid_name(entry.name) and entry.name not in self._known:
                    namespace = self._read_meta(entry.name)
                    if namespace is not None and (
                        namespace.idle_seconds is not None or namespace.expires_at is not None
                    ):
                        self._known.setdefault(entry.name, namespace)
        self._scanned = True

    # -- files ----------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _locked(self, name: str) -> AsyncIterator[None]:
        """`name`'s lock, held; kept only while someone holds or awaits it, so names that come
        and go (or never existed) leave no lock behind."""
        entry = self._locks.get(name)
        if entry is None:
            entry = self._locks[name] = _Lock(asyncio.Lock())
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if not entry.users:
                del self._locks[name]

    def _default(self) -> Namespace:
        return Namespace(DEFAULT, 0.0, None, 0.0)

    def _read_meta(self, name: str) -> Namespace | None:
        assert self._root is not None
        try:
            raw = loads((self._root / name / META).read_bytes())
            return Namespace(
                name,
                raw["created_at"],
                raw["idle_seconds"],
                raw.get("last_used_at", 0.0),
                raw.get("owner"),
                raw.get("expires_at"),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _write_meta(self, namespace: Namespace) -> None:
        assert self._root is not None
        path = self._root / namespace.name / META
        temporary = path.with_suffix(".tmp")
        with open(temporary, "wb") as file:
            file.write(dumps(asdict(namespace)))
            if self._fsync:
                file.flush()
                os.fsync(file.fileno())
        os.replace(temporary, path)

    def _namespace_secret(self) -> bytes:
        """The key of every namespace's key derivation: made once per data dir and kept beside
        the namespaces (a reset of `default` keeps it); without a data dir, per server (from
        the seed when there is one, so seeded tests see the same keys)."""
        if self._secret is None:
            if self._root is None:
                self._secret = (
                    secrets.token_bytes(32)
                    if self._seed is None
                    else hashlib.sha256(f"namespaces/{self._seed}".encode()).digest()
                )
            else:
                self._secret = read_or_make_secret(self._root / SECRET_FILE)
        return self._secret


@dataclass(slots=True)
class _Lock:
    lock: asyncio.Lock
    users: int = 0


def busy(why: str) -> ApiError:
    return ApiError(
        "service_unavailable",
        f"This namespace cannot be loaded now ({why}); retry shortly.",
        headers={"Retry-After": str(BUSY_RETRY_SECONDS)},
    )


def not_found(name: str) -> ApiError:
    return ApiError("namespace_not_found", f"No namespace {name!r}.", param="name")
