"""PostgreSQL behind ``panes.connectors.jdbc``: where to connect (``url``), what to send (``statements``, ``rows``),
how a sink writes it in transactions with its commit markers (``writer``, ``commits``), and what the job is told when
the database refuses (``failures``). Only ``writer`` and ``commits`` import psycopg, and only when a job runs."""
