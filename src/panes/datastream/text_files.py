"""JSON-lines, CSV and text files read with a declared schema, the same way on every runner: the rows that fit the
schema, and the lines that do not, each with its file, its line number and its text.

Both runners hand a whole file's bytes to :meth:`TextFormat.parse` (the local runner reads the file, Spark's
``binaryFile`` reader sends it to the Python step), so a bad line is found, and reported, identically. A file
parses in one pyarrow call when every line fits; otherwise its lines are split in halves until each bad line
stands alone, so a few bad lines cost a few extra calls, not one per line.

A line fits when pyarrow can read it as one row of the schema: JSON lines are objects whose declared fields
have the declared type's JSON form (a missing field or ``null`` is null; other fields are ignored; a
timestamp may be an ISO-8601 string); CSV lines have one value per declared column, in order (the header line,
when there is one, is skipped, not matched by name; an empty value is null). Blank lines are skipped.
"""

from __future__ import annotations

import codecs
import io
import json
import re
from bisect import bisect_left
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa

from panes.errors import BadInput, BadRecordError, ErrorRecord

TEXT_FORMATS = ("json", "csv", "text")
"""The file formats read as text lines (:class:`TextFormat`): ``text`` makes each line one string."""

TEXT_OPTIONS = ("charset",)
"""The reader option a ``text`` file source takes: ``charset`` (default ``"UTF-8"``), the files' encoding
(bytes that are not valid in it read as U+FFFD, as Java's readers do)."""

LINE_BREAK = re.compile(r"\r\n|\r|\n")
"""Where a text line ends (Java's ``readLine`` and Spark's text reader): ``\n``, ``\r`` or ``\r\n``."""

CSV_OPTIONS = ("header", "sep", "delimiter", "quote")
"""The reader options a CSV file source takes (Spark's names): ``header`` ``"true"`` (default) or ``"false"``,
``sep`` (or ``delimiter``, default ``","``) and ``quote`` (default ``'"'``), one character each."""

_MAX_BLOCK = 1 << 30
_NULL_LINE = re.compile(rb"(?m)^[ \t]*null[ \t\r]*$")


@dataclass(frozen=True)
class BadLine(BadInput):
    """A line of ``file`` (1-based ``line``) that is not a row of the schema: its ``text`` and the ``reason``."""

    file: str
    line: int
    text: str
    reason: str

    @property
    def value(self) -> dict[str, Any]:
        """What an error output carries as the record's value: the file, the line number and the text."""
        return {"file": self.file, "line": self.line, "text": self.text}

    def error(self, operator: str) -> BadRecordError:
        """The error that fails a job whose source has no error output (``side_output_errors``)."""
        error = BadRecordError(
            f"line {self.line} of {self.file} is not a row of the source's schema: {self.reason}; the line: "
            f"{self.text!r}. Fix the file, or set side_output_errors(tag) on the source to send such lines to an "
            "error output and go on."
        )
        error.operator = operator
        return error

    def record(self, operator: str) -> ErrorRecord:
        """The line on an error output (no timestamp, error type ``BadRecordError``)."""
        return ErrorRecord(self.value, None, self.reason, "BadRecordError", operator)


def file_name(path: str) -> str:
    """``path`` as error records name it on every runner: a local path made absolute (Spark's ``file:`` URIs
    become the same path); other URIs (``hdfs://``, ``s3a://``) as they are."""
    import os

    if path.startswith("file:"):
        path = unquote(urlparse(path).path)
    elif "://" in path:
        return path
    return os.path.abspath(path)


@dataclass(frozen=True)
class TextFormat:
    """How to read the lines of a JSON or CSV file as rows of ``schema`` (see the module docstring)."""

    format: str
    schema: pa.Schema
    header: bool = True
    delimiter: str = ","
    quote: str = '"'
    charset: str = "utf-8"

    @staticmethod
    def of(format: str, schema: pa.Schema, options: dict[str, str]) -> TextFormat:
        """The format of a file source; raises ``ValueError`` for an option the format does not take (JSON
        takes none; CSV :data:`CSV_OPTIONS`) or a value it cannot use."""
        if format not in TEXT_FORMATS:
            raise ValueError(f"a text file format is one of {TEXT_FORMATS}, not {format!r}")
        allowed = {"csv": CSV_OPTIONS, "text": TEXT_OPTIONS}.get(format, ())
        unknown = sorted(set(options) - set(allowed))
        if unknown:
            takes = f"only {', '.join(allowed)}" if allowed else "no options"
            raise ValueError(f"a {format} file source takes {takes}, not {', '.join(unknown)}")
        header = options.get("header", "true").lower()
        if header not in ("true", "false"):
            raise ValueError(f"header must be 'true' or 'false', not {options['header']!r}")
        delimiter = options.get("sep", options.get("delimiter", ","))
        quote = options.get("quote", '"')
        for name, value in (("sep", delimiter), ("quote", quote)):
            if len(value) != 1:
                raise ValueError(f"{name} must be one character, not {value!r}")
        charset = options.get("charset", "UTF-8")
        try:
            codecs.lookup(charset)
        except LookupError:
            raise ValueError(f"charset {charset!r} is not an encoding Python knows") from None
        return TextFormat(format, schema, header == "true", delimiter, quote, charset)

    def parse(self, data: bytes, file: str) -> tuple[pa.Table, list[BadLine]]:
        """The rows of ``data`` (the bytes of ``file``) that fit the schema, as one table in file order, and
        the lines that do not, in line order (``text``: every line is a row, the last one only when it is not
        empty)."""
        if self.format == "text":
            texts = LINE_BREAK.split(data.decode(self.charset, errors="replace"))
            if texts and texts[-1] == "":
                texts.pop()
            return pa.table([pa.array(texts, pa.string())], schema=self.schema), []
        first = 1 if self.format == "csv" and self.header else 0
        if first:
            newline = data.find(b"\n")
            body = b"" if newline < 0 else data[newline + 1 :]
        else:
            body = data
        # pyarrow crashes on a JSON line that is ``null`` alone at the start (and reads it as a row of nulls
        # elsewhere): such lines never reach it
        nulls = [] if self.format != "json" else [m.start() for m in _NULL_LINE.finditer(body)]
        if not nulls:
            try:
                return self._read(body), []
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                pass
        lines = body.split(b"\n")
        null_lines = [i for i, line in enumerate(lines) if _NULL_LINE.fullmatch(line)] if nulls else []
        tables: list[pa.Table] = []
        bad: list[BadLine] = []
        self._bisect(lines, 0, len(lines), first + 1, file, tables, bad, null_lines)
        table = pa.concat_tables(tables) if tables else self.schema.empty_table()
        return table, bad

    def _bisect(
        self,
        lines: list[bytes],
        low: int,
        high: int,
        number: int,
        file: str,
        tables: list[pa.Table],
        bad: list[BadLine],
        null_lines: list[int],
    ) -> None:
        """Parse ``lines[low:high]`` (the first is line ``number + low`` of ``file``), halving failing ranges
        and ranges with one of ``null_lines`` (sorted indices of JSON ``null`` lines) in them."""
        nulls = bisect_left(null_lines, high) - bisect_left(null_lines, low)
        if nulls == 0:
            try:
                tables.append(self._read(b"\n".join(lines[low:high])))
                return
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as error:
                failure: Exception = error
        if high - low == 1:
            text = lines[low].rstrip(b"\r").decode("utf-8", errors="replace")
            reason = "not a JSON object but null" if nulls else self._reason(text, failure)
            bad.append(BadLine(file_name(file), number + low, text, reason))
            return
        middle = (low + high) // 2
        self._bisect(lines, low, middle, number, file, tables, bad, null_lines)
        self._bisect(lines, middle, high, number, file, tables, bad, null_lines)

    def _read(self, data: bytes) -> pa.Table:
        if not data.strip():
            return self.schema.empty_table()
        block = min(max(len(data) + 1, 1 << 20), _MAX_BLOCK)
        if self.format == "json":
            import pyarrow.json as pa_json

            return pa_json.read_json(
                io.BytesIO(data),
                read_options=pa_json.ReadOptions(block_size=block),
                parse_options=pa_json.ParseOptions(explicit_schema=self.schema, unexpected_field_behavior="ignore"),
            )
        import pyarrow.csv as pa_csv

        return pa_csv.read_csv(
            io.BytesIO(data),
            read_options=pa_csv.ReadOptions(column_names=self.schema.names, block_size=block),
            parse_options=pa_csv.ParseOptions(delimiter=self.delimiter, quote_char=self.quote),
            convert_options=pa_csv.ConvertOptions(
                column_types=self.schema, strings_can_be_null=True, quoted_strings_can_be_null=False
            ),
        )

    def _reason(self, text: str, error: Exception) -> str:
        """Why ``text`` is not a row: the field whose value does not fit, where one can be named."""
        if self.format != "json":
            return f"not a CSV row of {self._columns()}: {_message(error)}"
        try:
            value = json.loads(text)
        except ValueError as bad_json:
            return f"not JSON ({bad_json})"
        if not isinstance(value, dict):
            return f"not a JSON object but {type(value).__name__ if value is not None else 'null'}"
        for field in self.schema:
            if value.get(field.name) is None:
                continue
            try:
                TextFormat("json", pa.schema([field]))._read(json.dumps({field.name: value[field.name]}).encode())
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                return f"field {field.name!r}: {value[field.name]!r} is not a {_ddl(field.type)}"
        return _message(error)

    def _columns(self) -> str:
        return ", ".join(f"{field.name} {_ddl(field.type)}" for field in self.schema)


def _ddl(arrow_type: pa.DataType) -> str:
    from panes.types import to_ddl

    return to_ddl(arrow_type)


def _message(error: Exception) -> str:
    """pyarrow's message without its row number (it counts rows of the piece parsed, not of the file)."""
    message = str(error).strip()
    for suffix in (" in row 0",):
        if message.endswith(suffix):
            message = message[: -len(suffix)]
    return message
