"""Drive the CLI as a user would, through gemmprof.cli.main: errors become one line and an exit code."""


def invoke(runner, args):
    import click

    from gemmprof.cli import main

    @click.command(context_settings={"ignore_unknown_options": True, "help_option_names": []})
    @click.argument("argv", nargs=-1, type=click.UNPROCESSED)
    def shim(argv):
        main(list(argv))

    return runner.invoke(shim, list(args))
