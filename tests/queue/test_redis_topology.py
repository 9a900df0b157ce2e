"""Redis connection URLs: one server, a cluster's seeds, Sentinel's sentinels and service."""

from __future__ import annotations

import pytest

import eventbus
from eventbus.errors import ConfigurationError
from eventbus.queue.redis import topology as redis_topology
from eventbus.urls import redact_url


def test_a_plain_url_is_one_server_unless_the_cluster_option_says_otherwise() -> None:
    one = redis_topology.parse("redis://u:p@h:6380/3")
    assert (one.kind, one.url) == ("server", "redis://u:p@h:6380/3")
    seed = redis_topology.parse("redis://h:7000/0", cluster=True)
    assert (seed.kind, seed.nodes) == ("cluster", (("h", 7000),))


def test_a_cluster_url_lists_its_seeds_with_the_default_port() -> None:
    topology = redis_topology.parse("redis+cluster://u:p@h1:7000,h2,[::1]:7002/0?ssl_cert_reqs=none")
    assert topology.kind == "cluster" and topology.cluster
    assert topology.nodes == (("h1", 7000), ("h2", 6379), ("::1", 7002))
    assert topology.url == "redis://u:p@h1:7000?ssl_cert_reqs=none"
    assert redis_topology.parse("rediss+cluster://h1:7000").url.startswith("rediss://h1:7000")


def test_a_sentinel_url_names_the_sentinels_the_service_and_the_database() -> None:
    topology = redis_topology.parse(
        "redis+sentinel://:secret@s1,s2:26380/mymaster/2?sentinel_password=watch&socket_keepalive=true")
    assert topology.kind == "sentinel" and topology.service == "mymaster"
    assert topology.nodes == (("s1", 26379), ("s2", 26380))
    assert topology.sentinel_options == (("sentinel_password", "watch"),)
    assert topology.url == "redis://:secret@master:6379/2?socket_keepalive=true"  # the data nodes' options


@pytest.mark.parametrize(("url", "says"), [
    ("redis+sentinel://s1,s2", "names the monitored master"),
    ("redis+sentinel://s1/mymaster/x", "must be a number"),
    ("redis+cluster://h1/3", "database 0 only"),
    ("redis+cluster://h1:port", "must be a number"),
    ("redis+cluster://h1,,h2", "a host is missing"),
    ("memcached://h1", "scheme must be one of"),
])
def test_a_bad_url_is_one_configuration_error_naming_the_connection(url: str, says: str) -> None:
    with pytest.raises(ConfigurationError, match=says) as caught:
        eventbus.configure(connections={"jobs": {"driver": "redis", "url": url}})
    assert "connection 'jobs'" in str(caught.value)


def test_the_failed_store_follows_the_connection_url() -> None:
    for url in ("redis+cluster://h1:7000,h2:7001", "redis+sentinel://s1/mymaster"):
        eventbus.configure(default="jobs", connections={"jobs": {"driver": "redis", "url": url}})
        assert eventbus.runtime.settings().failed == url
    eventbus.configure(default="jobs", connections={"jobs": {"driver": "redis", "url": "redis://h:7000/0",
                                                              "cluster": True}})
    assert eventbus.runtime.settings().failed == "redis://h:7000/0?cluster=1"


def test_urls_with_several_hosts_print_without_their_password() -> None:
    assert redact_url("redis+cluster://u:pw@h1:1,h2:2/?password=x") == "redis+cluster://u:***@h1:1,h2:2/?password=***"
    assert redact_url("redis+sentinel://:pw@s1,s2/mymaster/0") == "redis+sentinel://:***@s1,s2/mymaster/0"
    assert redact_url("redis+cluster://pw@h1:x,h2") == "<unparseable URL>"
