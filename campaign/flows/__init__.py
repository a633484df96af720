"""The flows a command runs, one module each: `freeze` (check a manifest and freeze a root),
`session` (lock -> runner -> judge -> seal), `screen` (a one-round session, its table, a
rescore). Commands parse arguments, call one flow and return its exit code; flows never
import commands."""
