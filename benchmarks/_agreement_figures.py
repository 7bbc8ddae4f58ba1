"""The figures of ``llm_endpoint_agreement.py``: one set of definitions for every client's per-request
records, the rounds' medians and the figures pooled over every round's requests, and their tables."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from _peers import Request

METRICS = ("ttft_p50_s", "ttft_p90_s", "tpot_p50_s", "output_tokens_per_s", "output_tokens_mean")


def figures(requests: Sequence[Request]) -> dict[str, Any]:
    """TTFT p50/p90, TPOT p50 and output tok/s of a point, one definition for every client; each
    request's TTFT and TPOT (``ttfts_s``, ``tpots_s``: the rounds pooled, ``pooled``), and both in the order
    the requests were sent (``sent``: a round's k-th request of one client is the k-th of the other, the
    same text in the same place of the waves; ``paired``)."""
    ttfts = sorted(r.ttft_s for r in requests)
    tpots = [_tpot_s(r) for r in requests if r.output_tokens > 1]
    span_s = max(r.end_s for r in requests) - min(r.send_s for r in requests)
    return {
        "ttft_p50_s": statistics.median(ttfts),
        "ttft_p90_s": _percentile(ttfts, 0.90),
        "tpot_p50_s": statistics.median(tpots),
        "output_tokens_per_s": sum(r.output_tokens for r in requests) / span_s,
        "output_tokens_mean": statistics.mean(r.output_tokens for r in requests),
        "ttfts_s": ttfts,
        "tpots_s": sorted(tpots),
        "sent": [(r.ttft_s, _tpot_s(r) if r.output_tokens > 1 else None) for r in _in_send_order(requests)],
    }


def _tpot_s(request: Request) -> float:
    return (request.end_s - request.send_s - request.ttft_s) / (request.output_tokens - 1)


def _in_send_order(requests: Sequence[Request]) -> list[Request]:
    return sorted(requests, key=lambda request: request.send_s)


def paired(
    rows: Sequence[dict[str, Any]], client: str, concurrency: int = 1
) -> dict[str, tuple[float, float, float, int, int]]:
    """``client`` / accelbench on the same round's k-th sent request (both send the round's texts in one
    order at one concurrency: the same prompt in the same wave): the median of the pairs' TTFT and TPOT
    ratios, its 95% interval, the number of pairs and of waves. The round-to-round spread of the batch
    mix, which the pooled medians carry, cancels within a pair. The interval is over *waves* (a round's
    requests ``k // concurrency``, each wave's median ratio), not requests: the requests of one wave share
    its fate (at c=4 the server prefills the first to arrive alone and the other three together, and
    those three have one TPOT), so an interval over requests counts one wave's luck ``concurrency``
    times (stop 64: c=4, 64 pairs in 16 waves, TPOT [0.938, 1.072] by requests, [0.873, 1.125] by
    waves; at stop 63 the 192 pairs' [0.930, 0.958] was that narrow for this reason)."""
    from accelbench.endpoint.figures import median_interval

    ratios: dict[str, list[float]] = {"ttft": [], "tpot": []}
    waves: dict[str, dict[tuple[int, int], list[float]]] = {"ttft": {}, "tpot": {}}
    for row in rows:
        if row["client"] != client or "sent" not in row:
            continue
        base = [r for r in rows if r["client"] == "accelbench" and r["round"] == row["round"] and "sent" in r]
        if not base or len(base[0]["sent"]) != len(row["sent"]):
            continue  # a round one of them did not finish whole: its requests cannot be paired
        for k, ((ttft, tpot), (ttft_base, tpot_base)) in enumerate(
            zip(row["sent"], base[0]["sent"], strict=True)
        ):
            wave = (row["round"], k // max(concurrency, 1))
            found = {"ttft": ttft / ttft_base}
            if tpot is not None and tpot_base is not None:
                found["tpot"] = tpot / tpot_base
            for name, ratio in found.items():
                ratios[name].append(ratio)
                waves[name].setdefault(wave, []).append(ratio)
    return {
        name: (
            statistics.median(values),
            *median_interval(sorted(statistics.median(w) for w in waves[name].values())),
            len(values),
            len(waves[name]),
        )
        for name, values in ratios.items()
        if values
    }


def by_round(rows: Sequence[dict[str, Any]], client: str) -> dict[str, tuple[float, float, float, int]]:
    """``client``'s figure over accelbench's *in the same round*, for every figure of ``METRICS``: the
    median of the rounds' ratios, the lowest and highest, and the number of rounds. A round runs the two
    clients back to back (ABBA). A machine speed that both runs of a round share cancels here as in the
    ratio of the rounds' medians (``print_point``'s table); a speed that differs between them (the drift
    within a round: stop 65's server alone moved 47-69 ms a token between runs minutes apart) cancels in
    neither, and the spread of these ratios shows how large it was: the floor under any comparison of
    the two clients on that machine in that run."""
    mine = {r["round"]: r for r in rows if r["client"] == client and "ttft_p50_s" in r}
    base = {r["round"]: r for r in rows if r["client"] == "accelbench" and "ttft_p50_s" in r}
    rounds = sorted(set(mine) & set(base))
    found: dict[str, tuple[float, float, float, int]] = {}
    for metric in METRICS:
        ratios = [mine[k][metric] / base[k][metric] for k in rounds if base[k][metric]]
        if ratios:
            found[metric] = (statistics.median(ratios), min(ratios), max(ratios), len(ratios))
    return found


def pooled(rows: Sequence[dict[str, Any]], client: str) -> dict[str, tuple[float, float, float]]:
    """A client's TTFT p50, TTFT p90 and TPOT p50 over every request of every round (a round's median
    moves with its few requests' batch mix; the pooled one is of rounds x requests): (value, low, high),
    the medians' low/high their distribution-free 95% interval (``endpoint.figures.median_interval``)."""
    from accelbench.endpoint.figures import median_interval

    ttfts = sorted(t for r in rows if r["client"] == client for t in r.get("ttfts_s", ()))
    tpots = sorted(t for r in rows if r["client"] == client for t in r.get("tpots_s", ()))
    if not ttfts or not tpots:
        return {}
    return {
        "ttft_p50_s": (statistics.median(ttfts), *median_interval(ttfts)),
        "ttft_p90_s": (_percentile(ttfts, 0.90), float("nan"), float("nan")),
        "tpot_p50_s": (statistics.median(tpots), *median_interval(tpots)),
    }


def _percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default) of sorted ``values``."""
    position = q * (len(values) - 1)
    low = int(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)


def print_point(rows: list[dict[str, Any]], clients: Sequence[str], point: tuple[str, int, int]) -> None:
    """The tables of one ``point`` (server kind, concurrency, output tokens): medians of the rounds'
    medians, pooled figures, each tool's own summary."""
    server, concurrency, output_tokens = point
    tokens_in = rows[-1]["input"] if rows else "?"
    requests = rows[-1].get("requests", "?") if rows else "?"
    print(f"\nserver {server}, concurrency {concurrency}, {requests} requests, {tokens_in} in")
    rounds = len({r["round"] for r in rows})
    print(f"(peers; accelbench: its own prompts) / {output_tokens} out, medians over {rounds} rounds")
    medians: dict[str, dict[str, float]] = {}
    spans: dict[str, dict[str, tuple[float, float]]] = {}
    for name in clients:
        done = [r for r in rows if r["client"] == name and "ttft_p50_s" in r]
        if done:
            medians[name] = {m: statistics.median(r[m] for r in done) for m in METRICS}
            spans[name] = {m: (min(r[m] for r in done), max(r[m] for r in done)) for m in METRICS}
    header = f"{'client':<11}" + "".join(f"{m:>34}" for m in METRICS)
    print(header)
    base = medians.get("accelbench") or next(iter(medians.values()), None)
    for name, values in medians.items():
        cells = [
            f"{values[m]:.4g} [{spans[name][m][0]:.3g}, {spans[name][m][1]:.3g}]"
            + (f" ({values[m] / base[m]:.3f})" if base else "")
            for m in METRICS
        ]
        print(f"{name:<11}" + "".join(f"{c:>34}" for c in cells))
    reference = "accelbench" if "accelbench" in medians else next(iter(medians), "none")
    print(
        f"median [lowest, highest over the rounds] (ratio of medians = client / {reference}); every figure "
        "from the client's per-request records"
    )
    _print_by_round(rows, clients)
    _print_pooled(rows, clients)
    _print_paired(rows, clients, concurrency)
    _print_probes(rows, clients)
    print("each client's own summary figures (median over rounds; definitions as the tool states them):")
    for name in clients:
        owns = [r["own"] for r in rows if r["client"] == name and r.get("own")]
        if owns:
            keys = [k for k in owns[0] if all(k in o for o in owns)]
            print(
                f"  {name:<11}" + ", ".join(f"{k} {statistics.median(o[k] for o in owns):.4g}" for k in keys)
            )
    for row in rows:
        if "error" in row:
            print(f"{row['client']} round {row['round']}: {row['error']}")


def _print_by_round(rows: list[dict[str, Any]], clients: Sequence[str]) -> None:
    """Each peer's median over accelbench's in the same round (``by_round``)."""
    print(
        "rounds paired (each round: client / accelbench, the runs adjacent), median of the rounds' ratios "
        "[lowest, highest]:"
    )
    for name in clients:
        found = by_round(rows, name) if name != "accelbench" else {}
        if found:
            cells = [f"{m} {v:.3f} [{lo:.3f}, {hi:.3f}]" for m, (v, lo, hi, _) in found.items()]
            print(f"  {name:<11}" + ", ".join(cells) + f" ({next(iter(found.values()))[3]} rounds)")


def _print_pooled(rows: list[dict[str, Any]], clients: Sequence[str]) -> None:
    """Each client's figures over every round's requests (``pooled``), with their ratios to accelbench's."""
    base = pooled(rows, "accelbench")
    print("pooled over every round's requests: median [95% interval over requests] (ratio to accelbench's):")
    for name in clients:
        figures_ = pooled(rows, name)
        if figures_:
            cells = [
                f"{m} {v:.4g}"
                + (f" [{low:.3g}, {high:.3g}]" if low == low else "")  # NaN: no interval (a p90)
                + (f" ({v / base[m][0]:.3f})" if base else "")
                for m, (v, low, high) in figures_.items()
            ]
            print(f"  {name:<11}" + ", ".join(cells))


def _print_paired(rows: list[dict[str, Any]], clients: Sequence[str], concurrency: int) -> None:
    """Each peer's median ratio to accelbench on the same round's k-th sent request (``paired``)."""
    print(
        "paired (the same round's k-th sent request: the same text in the same wave), median of ratios "
        "[95% interval over waves]:"
    )
    for name in clients:
        found = paired(rows, name, concurrency) if name != "accelbench" else {}
        if found:
            cells = [
                f"{m} {v:.3f} [{lo:.3f}, {hi:.3f}] ({n} pairs, {w} waves)"
                for m, (v, lo, hi, n, w) in found.items()
            ]
            print(f"  {name:<11}" + ", ".join(cells))


def _print_probes(rows: list[dict[str, Any]], clients: Sequence[str]) -> None:
    """The server's speed alone just before each client's run (``_server_under_test.speed_probe``), by
    round, and each client's TPOT over its run's probe TPOT: where the machine drifted between the runs
    of one round, the raw ratios carry the drift and these less so, as far as a lone request's speed
    tracks the loaded server's over a whole run (weakly on stop 65's VM: correlation 0.62, then 0.29)."""
    probed = [r for r in rows if r.get("probe") and "tpot_p50_s" in r]
    if not probed:
        return
    print(
        "the server alone before each run (fixed prompt, c=1): probe TPOT ms by round; run TPOT / probe TPOT:"
    )
    base = None
    for name in clients:
        mine = sorted((r for r in probed if r["client"] == name), key=lambda r: r["round"])
        if not mine:
            continue
        speeds = " ".join(f"r{r['round']} {r['probe']['tpot_s'] * 1e3:.1f}" for r in mine)
        relative = statistics.median(r["tpot_p50_s"] / r["probe"]["tpot_s"] for r in mine)
        base = base or relative
        print(f"  {name:<11}{speeds}; median {relative:.3f} ({relative / base:.3f} of the first client's)")
