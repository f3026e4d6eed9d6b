-- Agent sessions (the bot's work on one task, possibly over several runs) and their
-- conversations (redacted before they are written).
CREATE TABLE agent_sessions (
    id         text        PRIMARY KEY,
    repository text        NOT NULL,
    task       text        NOT NULL,
    state      text        NOT NULL
                           CHECK (state IN ('active', 'awaiting_guidance', 'finished', 'failed')),
    started_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    outcome    text
);

-- The latest session of a task in a repository.
CREATE INDEX agent_sessions_by_task ON agent_sessions (repository, task, updated_at DESC);

CREATE TABLE agent_conversations (
    id         bigserial   PRIMARY KEY,
    session    text        NOT NULL REFERENCES agent_sessions (id) ON DELETE CASCADE,
    role       text        NOT NULL CHECK (role IN ('maintainer', 'bot')),
    content    text        NOT NULL,
    tokens     integer     NOT NULL,
    created_at timestamptz NOT NULL
);

-- A session's messages in order.
CREATE INDEX agent_conversations_by_session ON agent_conversations (session, id);
