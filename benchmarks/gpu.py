"""Scoring throughput and latency with many concurrent streams, on a GPU (`--device cuda`) or the CPU (`--device cpu`).

Each stream is a client that sends one conversation (a Moore et al. stimulus and a real response), waits for all its
signal scores, and sends the next. A GPU pays off only when requests from different streams share a forward pass, so
requests go through a micro-batcher: it takes whatever is queued (up to `--max-batch`), waiting at most `--wait-ms`
for more, and scores it with one `SignalScorer.score_many` call. Reports conversations/s and per-request p50/p95 at
1, 8, 64 and 256 streams, and the machine. On `--device cpu` the same harness measures the CPU for comparison
(torch or, with `--backend`, ONNX Runtime); on `cuda` the encoder is torch's (the ONNX graphs run on the CPU).
Run: `.venv/bin/python benchmarks/gpu.py --device cuda` (or `--device cpu --streams 1 8 --seconds 10`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import threading
import time
from concurrent.futures import Future

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np


class MicroBatcher:
    """One worker thread that scores queued requests together; callers block on a Future."""

    def __init__(self, scorer, max_batch: int, wait_s: float) -> None:
        self.scorer, self.max_batch, self.wait_s = scorer, max_batch, wait_s
        self.requests: queue.Queue = queue.Queue()
        self.batches: list[int] = []
        self.worker = threading.Thread(target=self._run, daemon=True)
        self.worker.start()

    def score(self, conversation) -> dict:
        future: Future = Future()
        self.requests.put((conversation, future))
        return future.result()

    def close(self) -> None:
        self.requests.put(None)
        self.worker.join()

    def _run(self) -> None:
        while True:
            first = self.requests.get()
            if first is None:
                return
            batch = [first]
            deadline = time.perf_counter() + self.wait_s
            while len(batch) < self.max_batch:
                try:
                    item = self.requests.get(timeout=max(0.0, deadline - time.perf_counter()))
                except queue.Empty:
                    break
                if item is None:
                    self.requests.put(None)
                    break
                batch.append(item)
            self.batches.append(len(batch))
            try:
                results = self.scorer.score_many([conversation for conversation, _ in batch])
                for (_, future), result in zip(batch, results):
                    future.set_result(result)
            except Exception as exc:  # a failed batch fails its callers, not the benchmark's worker
                for _, future in batch:
                    future.set_exception(exc)


def run_streams(batcher: MicroBatcher, conversations: list, streams: int, seconds: float) -> dict:
    """`streams` clients in a closed loop for `seconds`; per-request latencies and the completed count."""
    latencies: list[float] = []
    lock = threading.Lock()
    stop = time.perf_counter() + seconds
    batcher.batches.clear()

    def client(offset: int) -> None:
        index = offset
        mine = []
        while time.perf_counter() < stop:
            started = time.perf_counter()
            batcher.score(conversations[index % len(conversations)])
            mine.append(time.perf_counter() - started)
            index += streams
        with lock:
            latencies.extend(mine)

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(streams)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    milliseconds = np.array(latencies) * 1000
    return {
        "streams": streams,
        "conversations": len(latencies),
        "conversations_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(float(np.percentile(milliseconds, 50)), 1),
        "p95_ms": round(float(np.percentile(milliseconds, 95)), 1),
        "mean_batch": round(float(np.mean(batcher.batches)), 1) if batcher.batches else 0.0,
    }


def machine(device: str) -> str:
    import torch

    described = f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}"
    if device.startswith("cuda"):
        described += f", {torch.cuda.get_device_name(device)}"
    return described


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu")
    parser.add_argument("--backend", default="torch", help="torch (any device), onnx or onnx-int8 (cpu)")
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 8, 64, 256])
    parser.add_argument("--seconds", type=float, default=20.0, help="measured time per stream count")
    parser.add_argument("--max-batch", type=int, default=256)
    parser.add_argument("--wait-ms", type=float, default=2.0, help="longest wait for a batch to fill")
    parser.add_argument("--conversations", type=int, default=400, help="distinct Moore conversations to cycle")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("no CUDA device is visible to torch: run with --device cpu to measure the CPU instead")

    from classifiers import SignalScorer, parse_conversation
    from classifiers.encoder import Encoder
    from guard.bench.checking import evenly_spaced
    from guard.bench.suites.moore_data import labelled_responses

    encoder = Encoder(backend=args.backend, device=args.device, batch_size=args.max_batch).load()
    # no embedding cache: the streams cycle through a fixed set, and every request must reach the encoder
    scorer = SignalScorer(encoder=encoder, cache_size=0).load()
    every = labelled_responses()
    conversations = [parse_conversation(every[i].messages) for i in evenly_spaced(len(every), args.conversations)]
    scorer.score_many(conversations[:8])  # first-call costs (kernels, allocator) outside the measurement
    figures = {
        "device": args.device,
        "backend": encoder.backend_,
        "machine": machine(args.device),
        "wait_ms": args.wait_ms,
        "max_batch": args.max_batch,
        "runs": [],
    }
    print(f"{args.device}, {encoder.backend_} encoder, {figures['machine']}")
    print("streams  conversations/s  p50 ms  p95 ms  mean batch")
    batcher = MicroBatcher(scorer, args.max_batch, args.wait_ms / 1000)
    try:
        for streams in args.streams:
            row = run_streams(batcher, conversations, streams, args.seconds)
            figures["runs"].append(row)
            print(
                f"{streams:7d}  {row['conversations_per_s']:15.1f}  {row['p50_ms']:6.1f}  {row['p95_ms']:6.1f}  "
                f"{row['mean_batch']:10.1f}"
            )
    finally:
        batcher.close()
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(figures, handle, indent=2)


if __name__ == "__main__":
    main()
