"""Best-of timing for the benchmark scripts."""
import time


def best_time(fn, budget: float = 0.3, repeat_max: int = 50) -> float:
    """Best wall time of ``fn()`` over repeats within about ``budget`` seconds."""
    best, spent, n = float("inf"), 0.0, 0
    while n < repeat_max and (n < 2 or spent < budget):
        t = time.perf_counter()
        fn()
        dt = time.perf_counter() - t
        best, spent, n = min(best, dt), spent + dt, n + 1
    return best


def table(header: list[str], rows: list[list]) -> str:
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
    return "\n".join([line(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in cells[1:]])
