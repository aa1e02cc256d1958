"Shared pytest hooks: the sandbox tests report which isolation levels ran."
import os


def pytest_terminal_summary(terminalreporter, config):
    levels = getattr(config, 'sandbox_levels_tested', None)
    if levels is None: return
    note = '' if os.geteuid() == 0 else ' (not root: the fallback runs as the caller, without a privilege drop)'
    terminalreporter.write_line(f"sandbox isolation levels tested: {', '.join(sorted(levels)) or 'none'}{note}")
