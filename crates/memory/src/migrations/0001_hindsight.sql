-- Hindsight entries shared across repositories. One row per (repository, signature) with what
-- is known about the failure; one row per resolution with its outcomes and whether it is
-- reviewed (merged on the learning repository's default branch, or approved).
CREATE TABLE hindsight_entries (
    repository  text        NOT NULL,
    signature   text        NOT NULL CHECK (signature ~ '^[0-9a-f]{2,64}$'),
    family_key  text        NOT NULL,
    kind        text        NOT NULL,
    template    text        NOT NULL,
    status      text        NOT NULL DEFAULT 'unresolved'
                            CHECK (status IN ('unresolved', 'escalated', 'resolved')),
    occurrences bigint      NOT NULL DEFAULT 0,
    tags        text[]      NOT NULL DEFAULT '{}',
    escalation  jsonb,
    first_seen  timestamptz NOT NULL,
    last_seen   timestamptz NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (repository, signature)
);

-- Exact lookups across repositories, and family lookups (same kind, same family key).
CREATE INDEX hindsight_entries_by_signature ON hindsight_entries (signature);
CREATE INDEX hindsight_entries_by_family ON hindsight_entries (kind, family_key);

CREATE TABLE hindsight_resolutions (
    repository  text        NOT NULL,
    signature   text        NOT NULL,
    resolution  text        NOT NULL,
    fix         jsonb       NOT NULL,
    applied     bigint      NOT NULL DEFAULT 0,
    succeeded   bigint      NOT NULL DEFAULT 0,
    failed      bigint      NOT NULL DEFAULT 0,
    last_used   timestamptz,
    reviewed    boolean     NOT NULL DEFAULT false,
    reviewed_at timestamptz,
    reviewed_by text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (repository, signature, resolution),
    FOREIGN KEY (repository, signature)
        REFERENCES hindsight_entries (repository, signature) ON DELETE CASCADE
);

-- The organisation's reviewed resolutions of a signature.
CREATE INDEX hindsight_resolutions_reviewed ON hindsight_resolutions (signature)
    WHERE reviewed;

-- Ids of the writes applied: a journal replayed after an outage counts nothing twice.
CREATE TABLE memory_writes (
    id         text        PRIMARY KEY,
    repository text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);
