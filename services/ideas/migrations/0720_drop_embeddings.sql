-- The ideas service's embeddings table (0510) belonged to similar ideas before they moved to a
-- service of their own (docs/similar.md), which keeps its vectors in its own schema. No process
-- reads or writes it any more.
DROP TABLE IF EXISTS ideas.embeddings;
DROP SEQUENCE IF EXISTS ideas.embedding_seq;
