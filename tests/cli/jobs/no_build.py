"""Not a job file: it defines no build(env)."""

VALUE = 1
