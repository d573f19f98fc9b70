-- Typed edges between memories (seed 002), as the memory's fold has them:
-- a JSON array of {from, to, relation, confidence}. Retrieval's graph
-- expansion reads them with the hit's row, so no join is needed.
ALTER TABLE memories ADD COLUMN relations TEXT NOT NULL DEFAULT '[]';
