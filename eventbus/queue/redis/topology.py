"""Where a Redis connection's data lives: one server, a Redis Cluster, or a master that Redis
Sentinel watches; read from the connection's URL, and the redis-py client for each.

The URL forms::

    redis://[user:password@]host[:port][/db][?options]          one server (rediss://: TLS; unix://: a socket)
    redis+cluster://[user:password@]host[:port][,host[:port]...][/0][?options]
    redis+sentinel://[user:password@]host[:port][,host[:port]...]/service[/db][?options]

``rediss+cluster://`` and ``rediss+sentinel://`` are the same over TLS. Every host of a cluster
URL is a seed node (port 6379 unless given): a client starts from whichever answers and learns
the rest of the cluster from it, so one seed that is down stops nobody. Every host of a Sentinel
URL is a sentinel (port 26379 unless given), ``service`` the name the sentinels monitor (their
``sentinel monitor <service> ...``). The user and password are the data nodes' (the master and
its replicas, the cluster's nodes); sentinels that want a password of their own take the
``sentinel_password`` (and ``sentinel_username``) options. Every other option is one redis-py
reads from a URL (``ssl_cert_reqs``, ``socket_keepalive``, ...). This grammar is the one of
Prefect's and the Redis-Sentinel-Url package's ``redis+sentinel://`` URLs; the cluster form
follows it. The older ``{"url": "redis://seed:7000", "cluster": True}`` still means a cluster.

Clients never retry a command on their own (a blind retry of a script is not safe); the driver
decides what to send again. Building a cluster's client asks the seeds for the cluster's layout:
when none answers, that is a lost connection like any other (``redis_errors.LOST_CONNECTION``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.cluster import ClusterNode, ClusterPipeline, RedisCluster
from redis.commands.core import Script
from redis.exceptions import NoScriptError
from redis.retry import Retry
from redis.sentinel import Sentinel

from eventbus.queue.redis.errors import LOST_CONNECTION
from eventbus.urls import query_params

SERVER, CLUSTER, SENTINEL = "server", "cluster", "sentinel"
#: Schemes of each kind; a plain ``redis://`` URL is a cluster only with the ``cluster`` option.
SCHEMES = {"redis": SERVER, "rediss": SERVER, "unix": SERVER, "redis+cluster": CLUSTER,
           "rediss+cluster": CLUSTER, "redis+sentinel": SENTINEL, "rediss+sentinel": SENTINEL}
DEFAULT_PORT = {SERVER: 6379, CLUSTER: 6379, SENTINEL: 26379}
#: Options of a Sentinel URL that are for the sentinels themselves, not the data nodes.
SENTINEL_OPTIONS = ("sentinel_username", "sentinel_password")


@dataclasses.dataclass(frozen=True)
class Topology:
    """A connection's servers, parsed from its URL (see the module docstring).

    ``url`` is a one-server ``redis://`` (or ``rediss://``, ``unix://``) URL with the data nodes'
    credentials, database and options: the URL itself for one server, the first seed for a
    cluster, and for Sentinel a stand-in host (the master's address comes from the sentinels).
    """

    kind: str
    url: str
    nodes: tuple[tuple[str, int], ...] = ()
    service: str = ""
    sentinel_options: tuple[tuple[str, str], ...] = ()

    @property
    def cluster(self) -> bool:
        return self.kind == CLUSTER

    def describe(self) -> str:
        """The servers in words, for messages (no credentials)."""
        hosts = ",".join(f"{h}:{p}" for h, p in self.nodes)
        if self.kind == CLUSTER:
            return f"the Redis Cluster seeded by {hosts}"
        if self.kind == SENTINEL:
            return f"the master {self.service!r} of the sentinels {hosts}"
        return "Redis"


def parse(url: str, *, cluster: bool = False) -> Topology:
    """The topology of ``url``; ``cluster`` makes a plain ``redis://`` URL a cluster's seed.

    Raises ValueError with a sentence saying what is wrong (the caller names the connection).
    """
    scheme, sep, rest = url.partition("://")
    kind = SCHEMES.get(scheme.lower()) if sep else None
    if kind is None:
        raise ValueError(f"the scheme must be one of {', '.join(s + '://' for s in SCHEMES)}")
    if kind == SERVER and not cluster:
        return Topology(SERVER, url)
    if kind == SERVER:  # the older form: one seed and the "cluster" option
        kind = CLUSTER
    parts = urlsplit(url)
    userinfo, _, hosts = parts.netloc.rpartition("@")
    nodes = tuple(_node(text, DEFAULT_PORT[kind]) for text in hosts.split(","))
    query = query_params(parts.query)
    data_scheme = "rediss" if scheme.lower().startswith("rediss") else "redis"
    path = parts.path.strip("/").split("/") if parts.path.strip("/") else []
    if kind == CLUSTER:
        if path and path != ["0"]:
            raise ValueError("a cluster has database 0 only (the URL's path must be empty or /0)")
        return Topology(CLUSTER, _one_server(data_scheme, userinfo, nodes[0], "", query), nodes)
    if not path or len(path) > 2 or not path[0]:
        raise ValueError("a Sentinel URL names the monitored master: redis+sentinel://host:26379,.../service[/db]")
    if len(path) == 2 and not path[1].isdigit():
        raise ValueError(f"the database after the service name must be a number, not {path[1]!r}")
    sentinel = tuple((name, values[-1]) for name in SENTINEL_OPTIONS if (values := query.pop(name, [])))
    db = path[1] if len(path) == 2 else ""
    return Topology(SENTINEL, _one_server(data_scheme, userinfo, ("master", 6379), db, query), nodes,
                    service=unquote(path[0]), sentinel_options=sentinel)


def _node(text: str, default_port: int) -> tuple[str, int]:
    host, colon, port = text.strip().rpartition(":") if ":" in text else (text.strip(), "", "")
    if not host:
        raise ValueError(f"a host is missing in the list of hosts (at {text!r})")
    if colon and not port.isdigit():
        raise ValueError(f"the port of {host!r} must be a number, not {port!r}")
    return host.strip("[]"), int(port) if colon else default_port


def _one_server(scheme: str, userinfo: str, node: tuple[str, int], db: str,
                query: Mapping[str, list[str]]) -> str:
    host = f"[{node[0]}]" if ":" in node[0] else node[0]
    netloc = f"{userinfo}@{host}:{node[1]}" if userinfo else f"{host}:{node[1]}"
    text = urlencode([(k, v) for k, values in query.items() for v in values])
    return urlunsplit((scheme, netloc, f"/{db}" if db else "", text, ""))


# -- clients ----------------------------------------------------------------------------------------

def sync_client(topology: Topology, *, socket_timeout: float | None, name: str,
                health_check_interval: int = 30) -> Any:
    """A redis-py client for ``topology`` that never retries on its own. Its connections carry
    ``name`` (``CLIENT LIST`` shows which belong to eventbus)."""
    options: dict[str, Any] = {"client_name": name, "retry": Retry(NoBackoff(), 0),
                               "socket_timeout": socket_timeout, "socket_connect_timeout": 5.0}
    if topology.kind == CLUSTER:
        seeds = [ClusterNode(host, port) for host, port in topology.nodes[1:]]  # type: ignore[no-untyped-call]
        return ClusterClient.from_url(topology.url, startup_nodes=seeds, **options)
    options.update(driver_identity())
    if topology.kind == SENTINEL:
        return sentinel_manager(topology, Sentinel, options).master_for(
            topology.service, health_check_interval=health_check_interval)
    return redis.Redis.from_url(topology.url, health_check_interval=health_check_interval, **options)


@functools.cache
def driver_identity() -> dict[str, Any]:
    """The client library's name and version for ``CLIENT SETINFO``, made once per process.

    redis-py 8 looks its own version up in the installed package's metadata for every new
    connection when it is not given one: a scan of ``sys.path`` and a parse of its ``METADATA``,
    14 ms the first time in a process (it imports the e-mail parser) and about 0.8 ms after,
    a third of opening a connection; a worker opens three before its first job. The version is
    ``redis.__version__``. Older redis-py read it once at import and take no such option.
    """
    try:
        from redis.driver_info import DriverInfo
    except ImportError:
        return {}
    return {"driver_info": DriverInfo(lib_version=redis.__version__)}


def sentinel_manager(topology: Topology, cls: Callable[..., Any], options: Mapping[str, Any]) -> Any:
    """A redis-py ``Sentinel`` (or its asyncio twin, ``cls``) for the topology's sentinels: they
    get the socket timeouts and no retries, plus their own credentials; the data nodes get the
    URL's credentials, database and options."""
    data = redis.connection.parse_url(topology.url)  # type: ignore[no-untyped-call]
    data.pop("host", None)
    data.pop("port", None)
    own = dict(topology.sentinel_options)
    sentinel_kwargs = {"socket_timeout": options["socket_timeout"] or 5.0,
                       "socket_connect_timeout": options["socket_connect_timeout"],
                       "retry": options["retry"],
                       **{key.removeprefix("sentinel_"): value for key, value in own.items()}}
    return cls(list(topology.nodes), sentinel_kwargs=sentinel_kwargs, **{**data, **options})


#: Attempts of the one command redis-py sends while it builds a cluster client (``COMMAND``, to
#: its default node, the first master it learnt of): another master is asked when that one is down.
BUILD_ATTEMPTS = 3


class ClusterClient(RedisCluster):
    """redis-py's cluster client, made to work while one master is down.

    - Building it asks ``COMMAND`` of one master; with that master down redis-py gives up at
      once. Here the build may try other masters; once built, the client retries nothing.
    - A script a node does not know yet (after a restart, or the first call) is sent with
      ``EVAL`` to the node of its keys (:class:`EvalScript`); redis-py would first ``SCRIPT LOAD``
      it on every master, which fails while any one of them is down.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        retry = kwargs.pop("retry")
        kwargs["retry"] = Retry(NoBackoff(), BUILD_ATTEMPTS)
        super().__init__(*args, **kwargs)
        self.set_retry(retry)

    def register_script(self, script: Any) -> Script:
        return EvalScript(self, script)


class EvalScript(Script):
    """A script that a node without it runs with ``EVAL`` (loading it on that node only).

    A ``NOSCRIPT`` reply means the script did not run, so sending it again is safe.
    """

    def __call__(self, keys: Any = None, args: Any = None, client: Any = None) -> Any:
        target = self.registered_client if client is None else client
        if isinstance(target, ClusterPipeline):
            return super().__call__(keys, args, client)
        arguments = [*(keys or []), *(args or [])]
        try:
            return target.evalsha(self.sha, len(keys or []), *arguments)
        except NoScriptError:
            return target.eval(self.script, len(keys or []), *arguments)  # type: ignore[arg-type]


def scan_nodes(client: Any, pattern: str, count: int = 1000) -> tuple[list[bytes], list[str]]:
    """Every key matching ``pattern`` on the servers of ``client``, and those it could not scan.

    One server (or Sentinel's master): a lost connection raises. A cluster: each master in turn;
    one that does not answer is named in the second list and the others are scanned all the same.
    """
    if not isinstance(client, RedisCluster):
        return list(client.scan_iter(match=pattern, count=count)), []
    found: list[bytes] = []
    missed: list[str] = []
    for node in client.get_primaries():  # type: ignore[no-untyped-call]
        try:
            found += client.scan_iter(match=pattern, count=count, target_nodes=node)
        except LOST_CONNECTION:
            missed.append(str(node.name))
    return found, missed
