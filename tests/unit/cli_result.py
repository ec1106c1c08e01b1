"""What every bad-input test of the CLI checks: exit 1 and one `vllm-eks: error:` line on stderr
that names what was wrong, never a traceback."""

from __future__ import annotations


def one_line_error(result, *needles: str) -> str:
    assert result.exit_code == 1, (result.exit_code, result.output)
    err = result.stderr.strip()
    assert "\n" not in err and "Traceback" not in err and err.startswith("vllm-eks: error: "), err
    for needle in needles:
        assert needle in err, err
    return err
