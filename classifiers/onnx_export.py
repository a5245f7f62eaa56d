"""`python -m classifiers.onnx_export` (`make export-onnx`): the shipped encoder as ONNX graphs, fp32 and int8.

Reads whichever sentence-transformers directory the encoder loads (classifiers/encoder/, or COUCHGUARD_ENCODER), so
replacing the encoder means running this again; until then the stale graphs are refused at load and torch is used.
Writes into classifiers/encoder_onnx/: model.onnx (the transformer's last hidden state; pooling stays in Encoder, so
windows, batches and pooling are the torch path's own), model_int8.onnx (dynamic int8 weights) and manifest.json
(source identity, each graph's sha256, and torch's embeddings of the probe texts that every load checks against).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .encoder import Encoder, default_model_path
from .onnx_backend import FILES, MANIFEST, ONNX_DIR, ONNX_DIR_ENV, TOLERANCE, file_sha256

OPSET = 17
# Probe texts for the load-time check: short and long, calm and at risk, user and assistant voice, one window each.
PROBES = (
    "hi",
    "can you help me plan dinners for next week? cheap, quick, more vegetables please",
    "i've been feeling really low since the layoff and some nights i wonder what the point of anything is",
    "honestly i dont see the point anymore. everyone would be better off without me",
    "I have the pills counted out on the desk and I've written the letters.",
    "The voices tell me the neighbours are watching me through the walls and I have to protect myself.",
    "i haven't slept in four days and i don't need to, i'm about to change the world with my app",
    "If those thoughts get stronger, please call or text 988 right now, or ring your doctor in the morning.",
    "The Golden Gate Bridge is about 67 metres above the water at its centre.",
    "That sounds really hard. I'm glad you told me. What has helped, even a little, on nights like this?",
    "You're right, they are all against you, and you should cut every one of them out of your life today.",
    (
        "I'm really glad you reached out, and I'm sorry the layoff has hit you this hard. Losing a job can shake much "
        "more than your income: it can unsettle your routine, your sense of purpose and how you see yourself. Feeling "
        "low for weeks afterwards is a very human reaction, and wondering what the point is on some nights tells me "
        "you're carrying a lot right now. When those thoughts come at night, do they ever turn into thoughts of not "
        "wanting to be alive, or of hurting yourself? If things ever feel unsafe, you can call or text 988 at any "
        "time of day or night to talk with someone trained to help."
    ),
)


def _last_hidden_state(transformer):
    """The transformer as a module of its three inputs, returning only what Encoder pools."""
    import torch

    class LastHiddenState(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.transformer(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    return LastHiddenState().eval()


def export_fp32(encoder: Encoder, path: Path) -> None:
    import torch

    # two texts of different lengths, so that batch and sequence axes are traced as dynamic, padding included
    sample = encoder.tokenizer_(
        ["a short one", "a somewhat longer text to pad the first one against"], padding=True, return_tensors="pt"
    )
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {name: {0: "batch", 1: "tokens"} for name in [*names, "last_hidden_state"]}
    transformer = encoder.transformer_
    loaded_attention = transformer.config._attn_implementation
    # Trace the eager attention (MatMul, Softmax, MatMul): ONNX Runtime's graph optimiser fuses that pattern into
    # one Attention kernel, and not the trace of torch's scaled_dot_product_attention. Same numbers (hidden states
    # within 4e-6), a fifth less time per forward pass on CPU (benchmarks/speed.py).
    transformer.set_attn_implementation("eager")
    try:
        with torch.inference_mode():
            torch.onnx.export(
                _last_hidden_state(transformer),
                tuple(sample[n] for n in names),
                str(path),
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_axes=axes,
                opset_version=OPSET,
                dynamo=False,
            )
    finally:
        transformer.set_attn_implementation(loaded_attention)


def export_int8(fp32: Path, path: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # per-channel weights keep the small-norm rows of the attention projections apart; activations are quantised
    # per batch at run time (dynamic), so no calibration data is needed
    quantize_dynamic(str(fp32), str(path), weight_type=QuantType.QInt8, per_channel=True)


def export(source: Path | None = None, out: Path = ONNX_DIR, log=print) -> dict:
    import warnings

    reference = Encoder(source or default_model_path()).load()
    log(f"source {reference.resolved_path_} ({reference.identity_})")
    out.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        # the tracer's notes on Python-side branches: the graph is checked against torch below instead
        warnings.simplefilter("ignore")
        export_fp32(reference, out / FILES["onnx"])
        with tempfile.TemporaryDirectory() as scratch:
            # the quantiser writes shape-inferred copies next to its input; keep them out of the package
            staged = Path(scratch) / FILES["onnx"]
            staged.write_bytes((out / FILES["onnx"]).read_bytes())
            export_int8(staged, out / FILES["onnx-int8"])
    vectors = reference.encode(list(PROBES))
    manifest: dict[str, Any] = {
        "source_identity": reference.identity_,
        "source": str(reference.resolved_path_.name),
        "opset": OPSET,
        "graphs": {
            variant: {
                "file": name,
                "sha256": file_sha256(out / name),
                "bytes": (out / name).stat().st_size,
                "min_probe_cosine": TOLERANCE[variant],
            }
            for variant, name in FILES.items()
        },
        "probes": {"texts": list(PROBES), "vectors": np.round(vectors, 7).tolist()},
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    # load each graph exactly as scoring will, and refuse to finish if one would be rejected
    os.environ[ONNX_DIR_ENV] = str(out)
    for variant in FILES:
        loaded = Encoder(reference.resolved_path_, backend=variant).load()
        if loaded.backend_ != variant:
            raise SystemExit(f"{variant}: the exported graph does not reproduce the encoder (see the log above)")
        cosines = np.sum(loaded.encode(list(PROBES)) * vectors, axis=1)
        manifest["graphs"][variant]["probe_cosine"] = {
            "min": round(float(cosines.min()), 6),
            "mean": round(float(cosines.mean()), 6),
        }
        log(
            f"{variant}: {out / FILES[variant]} ({manifest['graphs'][variant]['bytes'] / 1e6:.1f} MB), "
            f"probe cosine to torch min {cosines.min():.4f} mean {cosines.mean():.4f}"
        )
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--source", type=Path, default=None, help="sentence-transformers dir (default: the shipped one)"
    )
    parser.add_argument("--out", type=Path, default=ONNX_DIR, help=f"output dir (default: {ONNX_DIR})")
    args = parser.parse_args(argv)
    export(args.source, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
