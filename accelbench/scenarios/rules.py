"""Rule sets: how long and how often LoadGen measures a cell, from a quick look to MLPerf's durations.

``quick`` and ``standard`` are accelbench's own, shorter than MLPerf and marked unofficial; ``official``
copies the durations and query counts of LoadGen's ``mlperf.conf`` (v6.0): 600 s everywhere, 662
multi-stream queries, 24576 offline samples (ResNet-50's), and LoadGen's default of 100 queries where
``mlperf.conf`` sets none (single-stream, server). MLPerf has no latency bound for accelbench's models,
so every rule set bounds server latency itself (see ``Rules.server_latency_bound_for``).

``quick`` fits a tiny model in seconds but is too short for multi-stream's early stopping (662
queries), so its multi-stream results come out INVALID by design; ``standard`` asks for 662.
"""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.errors import UserError

LOADGEN_SCENARIOS = ("single-stream", "multi-stream", "server", "offline")
"""The MLPerf inference scenarios LoadGen drives, in accelbench's spelling."""
SCENARIOS = (*LOADGEN_SCENARIOS, "train-to-quality")
"""Every scenario: the LoadGen ones and MLPerf Training's time to quality (``train-to-quality``, run by
``accelbench.training``, not by LoadGen)."""


@dataclass(frozen=True, slots=True)
class Rules:
    """Durations, query counts and loads under which LoadGen measures every scenario."""

    name: str
    min_duration_s: float
    """Minimum timed duration of single-stream, multi-stream and offline."""
    min_query_count: int
    """Minimum queries of single-stream (its early stopping needs 64 for the 90th percentile)."""
    server_min_duration_s: float
    """Server needs longer runs: its early stopping counts queries, which arrive at a fraction of capacity."""
    server_min_query_count: int
    """Server early stopping needs 459 queries all under the bound to vouch for the 99th percentile."""
    trials: int
    """How many times the runner repeats the measurement of a cell (fresh process each time)."""
    official: bool
    multi_stream_min_query_count: int
    """MLPerf's 662 is the fewest queries for which early stopping can vouch for a 99th percentile."""
    offline_min_sample_count: int
    """Minimum samples in the single offline query (MLPerf: 24576 for ResNet-50)."""
    multi_stream_samples_per_query: int = 8
    server_latency_bound_s: float = 0.1
    """Floor of the server 99th-percentile latency bound (LoadGen's default is 100 ms)."""
    server_latency_bound_factor: float = 0.0
    """The bound is ``max(server_latency_bound_s, factor * calibrated latency)``; 0 keeps it fixed."""
    server_load_fraction: float = 0.5
    """Server target QPS as a fraction of the calibrated capacity ``1 / latency``."""
    calibration_budget_s: float = 0.3
    """Wall time of the warm probe that estimates latency before LoadGen starts."""
    output_checks: int = 96
    """Outputs the output check and the quality gate compare with their references, spread over all trials
    of a cell. 96 (with the 4-12 alternate-seed samples) catch a stack whose answers are wrong on 2% of
    its calls with probability 0.86-0.89, on 10% with 0.99997; ``quick``'s 32 (one reference call each,
    after the run: 62 / 194 / 36 ms on standard ResNet-50 / BERT / MiniLM, so ``make run`` keeps them)
    catch 10% with 0.966-0.990 and 2% with 0.48-0.59 (``meters.quality.detection_probability``)."""
    server_search_probes: int = 8
    """LoadGen server runs the max-QPS search may spend before the scored trials (``server_search``)."""
    endpoint_point_max_s: float = 0.0
    """How long a served-LLM curve point may go on after its first requests while its TTFT or TPOT
    median is not yet known to 10% (``accelbench.endpoint.extension``); 0: its first requests only."""

    def min_duration_for(self, scenario: str) -> float:
        """Minimum duration in seconds LoadGen is given for ``scenario``."""
        return self.server_min_duration_s if scenario == "server" else self.min_duration_s

    def min_queries_for(self, scenario: str) -> int:
        """LoadGen's ``min_query_count`` for ``scenario`` (samples, for offline)."""
        if scenario == "multi-stream":
            return self.multi_stream_min_query_count
        if scenario == "offline":
            return self.offline_min_sample_count
        if scenario == "server":
            return self.server_min_query_count
        return self.min_query_count

    def server_latency_bound_for(self, latency_s: float) -> float:
        """The server latency bound in seconds for a model whose calibrated latency is ``latency_s``."""
        return max(self.server_latency_bound_s, self.server_latency_bound_factor * latency_s)


RULES: dict[str, Rules] = {
    "quick": Rules(
        name="quick",
        min_duration_s=1.0,
        min_query_count=64,
        server_min_duration_s=3.0,
        server_min_query_count=500,
        trials=1,
        official=False,
        multi_stream_min_query_count=64,
        offline_min_sample_count=64,
        server_latency_bound_factor=10.0,
        calibration_budget_s=0.2,
        output_checks=32,
        server_search_probes=5,
    ),
    "standard": Rules(
        name="standard",
        min_duration_s=3.0,
        min_query_count=100,
        server_min_duration_s=10.0,
        server_min_query_count=1000,
        trials=3,
        official=False,
        multi_stream_min_query_count=662,
        offline_min_sample_count=256,
        server_latency_bound_factor=10.0,
        calibration_budget_s=0.5,
        endpoint_point_max_s=60.0,
    ),
    "official": Rules(
        name="official",
        min_duration_s=600.0,
        min_query_count=100,
        server_min_duration_s=600.0,
        server_min_query_count=100,
        trials=1,
        official=True,
        multi_stream_min_query_count=662,
        offline_min_sample_count=24576,
        calibration_budget_s=2.0,
        server_search_probes=10,
        endpoint_point_max_s=600.0,
    ),
}
"""The rule sets by name."""


def get_rules(name: str) -> Rules:
    """The rule set called ``name``; raises UserError listing the valid names for an unknown one."""
    try:
        return RULES[name]
    except KeyError:
        raise UserError(f"unknown rules {name!r}; choose one of: {', '.join(RULES)}") from None
