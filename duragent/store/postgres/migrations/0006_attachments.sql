-- duragent schema 6: the bytes of the attachments a session's messages carry (issue 36),
-- content-addressed (store/attachment_blobs.py, store/postgres/attachment_rows.py).
-- Keyed by the session's row, as saved_outputs are: deleting the session deletes its blobs,
-- and a quarantined copy keeps its own. The hash is checked here too, so no row can name
-- anything but a SHA-256. EXTERNAL storage: photos, audio and video are compressed already,
-- so the bytes go out of line uncompressed instead of through a compression attempt.
CREATE TABLE attachments (
    session_key bigint NOT NULL REFERENCES sessions ON DELETE CASCADE,
    sha256      text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    content     bytea NOT NULL,
    stored_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_key, sha256)
);
ALTER TABLE attachments ALTER COLUMN content SET STORAGE EXTERNAL;
