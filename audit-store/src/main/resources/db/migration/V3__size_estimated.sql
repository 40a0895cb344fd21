-- A decision whose stored bytes the producer estimated (a GGUF type it did not know, sized by the gap to the next
-- tensor) says so, so nobody audits an estimate believing it exact. AllocationDecided v1 records, which cannot say,
-- are priced sizes: FALSE.
ALTER TABLE decisions ADD COLUMN size_estimated BOOLEAN DEFAULT FALSE NOT NULL;
