"""The SQL a JDBC sink sends: a user's statement with JDBC's ``?`` placeholders in psycopg's spelling, and the
upsert and delete statements of an upsert sink.

JDBC marks parameters with ``?``; psycopg with ``%s`` (and takes a literal ``%`` as ``%%``, wherever it is).
:func:`translate_placeholders` rewrites one into the other: a ``?`` in a string literal, a quoted identifier, a
dollar-quoted string or a comment is text, not a parameter, and ``??`` is one literal ``?`` (as PostgreSQL's JDBC
driver reads it, for the ``jsonb`` operators ``?``, ``?|`` and ``?&``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_QUOTED_NAME = re.compile(r'"(?:[^"]|"")+"')
_DOLLAR_TAG = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$")


def translate_placeholders(sql: str) -> tuple[str, int]:
    """``sql`` with each JDBC ``?`` parameter as ``%s`` and every ``%`` as ``%%``, and the number of parameters
    (see the module docstring). ``ValueError`` for an unterminated string, identifier or comment, or a
    statement that already uses psycopg's ``%s`` (write ``?``)."""
    if not isinstance(sql, str) or not sql.strip():
        raise ValueError(f"the SQL statement must be a non-empty string, got {sql!r}")
    out: list[str] = []
    count = 0
    i, n = 0, len(sql)
    while i < n:
        char = sql[i]
        if char == "?":
            if sql.startswith("??", i):
                out.append("?")
                i += 2
                continue
            out.append("%s")
            count += 1
            i += 1
        elif char == "%":
            if sql.startswith(("%s", "%(", "%b", "%t"), i):
                raise ValueError(
                    f"the statement uses psycopg's placeholder {sql[i : i + 2]!r}; write JDBC's ? for each "
                    "parameter (panes translates them)"
                )
            out.append("%%")
            i += 1
        elif char in "'\"":
            end = _closing_quote(sql, i, char)
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            end = n if end < 0 else end
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif sql.startswith("/*", i):
            end = _block_comment_end(sql, i)
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif char == "$" and (match := _DOLLAR_TAG.match(sql, i)) and not _in_word(sql, i):
            tag = match.group(0)
            close = sql.find(tag, match.end())
            if close < 0:
                raise ValueError(f"the dollar-quoted string opened by {tag} at position {i} is not closed")
            end = close + len(tag)
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        else:
            out.append(char)
            i += 1
    return "".join(out), count


def _closing_quote(sql: str, start: int, quote: str) -> int:
    """The index after the literal or quoted identifier opened at ``start`` (a doubled quote is part of it; in an
    ``E'...'`` string a backslash escapes the next character)."""
    escapes = quote == "'" and start > 0 and sql[start - 1] in "eE" and not _in_word(sql, start - 1)
    i = start + 1
    while i < len(sql):
        char = sql[i]
        if escapes and char == "\\":
            i += 2
            continue
        if char == quote:
            if sql.startswith(quote * 2, i):
                i += 2
                continue
            return i + 1
        i += 1
    kind = "string literal" if quote == "'" else "quoted identifier"
    raise ValueError(f"the {kind} opened at position {start} of the statement is not closed")


def _block_comment_end(sql: str, start: int) -> int:
    depth, i = 0, start
    while i < len(sql):
        if sql.startswith("/*", i):
            depth += 1
            i += 2
        elif sql.startswith("*/", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i
        else:
            i += 1
    raise ValueError(f"the comment opened at position {start} of the statement is not closed")


def _in_word(sql: str, i: int) -> bool:
    """Whether position ``i`` continues a word (``$`` inside an identifier such as ``a$b`` is no quote)."""
    return i > 0 and (sql[i - 1].isalnum() or sql[i - 1] in "_$")


def check_table_name(table: str) -> str:
    """``table`` as written in SQL (``name``, ``schema.name``, each part plain or in double quotes); returned
    unchanged, ``ValueError`` otherwise."""
    if not isinstance(table, str) or not table:
        raise ValueError(f"the table name must be a non-empty string, got {table!r}")
    rest = table
    while True:
        match = _QUOTED_NAME.match(rest) or _PLAIN_NAME.match(rest)
        if match is None:
            break
        rest = rest[match.end() :]
        if not rest:
            return table
        if not rest.startswith("."):
            break
        rest = rest[1:]
    raise ValueError(
        f"{table!r} is not a table name: write it as in SQL, name or schema.name, each part a plain name "
        '(letters, digits, _) or in double quotes ("My Table")'
    )


def quote_name(name: str) -> str:
    """A column name as a quoted identifier: the column of exactly that name (case and all)."""
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class UpsertStatements:
    """The statements of an upsert sink on ``table``: ``upsert`` inserts a row of ``columns`` (in that order) or,
    when a row with the same ``keys`` exists, replaces its other columns; ``delete`` removes the row of the keys
    (its parameters: the keys in order)."""

    table: str
    columns: tuple[str, ...]
    keys: tuple[str, ...]

    @property
    def upsert(self) -> str:
        return self._upsert(f"VALUES ({', '.join('%s' for _ in self.columns)})")

    def upsert_from(self, stage: str) -> str:
        """The upsert of every row of table ``stage`` (holding :attr:`columns`; keys distinct)."""
        return self._upsert(f"SELECT {', '.join(quote_name(c) for c in self.columns)} FROM {stage}")

    def _upsert(self, rows: str) -> str:
        names = ", ".join(quote_name(c) for c in self.columns)
        conflict = ", ".join(quote_name(k) for k in self.keys)
        others = [c for c in self.columns if c not in self.keys]
        action = (
            "DO UPDATE SET " + ", ".join(f"{quote_name(c)} = EXCLUDED.{quote_name(c)}" for c in others)
            if others
            else "DO NOTHING"
        )
        return f"INSERT INTO {self.table} ({names}) {rows} ON CONFLICT ({conflict}) {action}"

    @property
    def delete(self) -> str:
        where = " AND ".join(f"{quote_name(k)} = %s" for k in self.keys)
        return f"DELETE FROM {self.table} WHERE {where}"

    def key_positions(self) -> tuple[int, ...]:
        """Where the keys are among :attr:`columns`."""
        return tuple(self.columns.index(k) for k in self.keys)


def upsert_statements(table: str, columns: Sequence[str], keys: Sequence[str]) -> UpsertStatements:
    """The statements of an upsert sink; ``ValueError`` when there is no key, a key is not a column, or a name
    repeats."""
    columns, keys = tuple(columns), tuple(keys)
    if not keys:
        raise ValueError("an upsert sink needs its key columns (with_key_columns('key', 'window_start', ...))")
    for what, names in (("key column", keys), ("column", columns)):
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"{what}s {repeated} are named more than once")
    missing = [k for k in keys if k not in columns]
    if missing:
        raise ValueError(f"key columns {missing} are not among the columns written ({', '.join(columns)})")
    return UpsertStatements(check_table_name(table), columns, keys)
