"""Operator tools on a deployment's store and vectors (docs/deploy.md,
docs/troubleshooting.md).

Owns ``hindsight doctor`` (:mod:`.doctor`: find and repair what makes "recalled nothing"),
``hindsight reembed`` (:mod:`.reembed`: move a store to another embedding model) and
``hindsight backup`` / ``restore`` (:mod:`.backup`: SQLite or PostgreSQL, vectors rebuilt from
the stored embeddings). The lesson lifecycle's own periodic run (``hindsight maintain``: dedup,
archive, compression) is write-back's: :mod:`hindsight.writeback.maintain`.

May import: the foundation, the store, the vector indexes and the embedders. Never a pipeline
stage, the engine, the service or the CLI (the doctor works on the components an open memory
hands it).
"""
