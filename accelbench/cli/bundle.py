"""The CLI commands of results that travel: ``bundle`` (write a run's archive), ``verify`` (check one),
``compare`` (two runs or bundles side by side) and ``publish`` (a static site from many bundles).

``register(app)`` adds them to the typer app of ``accelbench.cli``. Exit codes: ``verify`` 0 when every
claim matched, 1 when one differs; 2 (``UserError``, one line) for bad input: an unknown run id, an
unwritable or refused ``-o``, a file that is not a readable bundle.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer

from accelbench.cli.options import (
    ChipsOption,
    ForceOption,
    JsonOption,
    StoreOption,
    UnverifiedOption,
    chosen_run,
    chosen_store,
    store_dir,
)


def bundle(
    run_id: Annotated[str, typer.Argument(help="The run to bundle.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Archive to write: .tar.gz or .zip.")],
    sign_key: Annotated[
        Path | None, typer.Option("--sign-key", help="OpenSSH ed25519 private key file to sign with.")
    ] = None,
    store_path: StoreOption = None,
    force: ForceOption = False,
) -> None:
    """Write one archive of a run: results, logs, audit evidence, machine, versions and a SHA-256 MANIFEST."""
    from accelbench.bundle import write_bundle

    with chosen_store(store_path, read_only=True) as store:
        count = write_bundle(store, chosen_run(store, run_id), output, sign_key, force)
    signed = "signed" if sign_key else "UNSIGNED (give --sign-key to sign)"
    typer.echo(f"wrote {output}: {count} files and their MANIFEST, {signed}")


def verify(
    file: Annotated[Path, typer.Argument(help="A bundle written by accelbench bundle.")],
    trust_key: Annotated[
        Path | None,
        typer.Option("--trust-key", help="OpenSSH ed25519 public key the bundle must be signed with."),
    ] = None,
) -> None:
    """Check a bundle's hashes and signature and derive its figures, verdicts and statuses again."""
    from accelbench.bundle import read_archive
    from accelbench.bundle import verify as verify_archive
    from accelbench.bundle.signing import trusted_key
    from accelbench.report.bundles import verification_lines

    trusted = trusted_key(trust_key) if trust_key else None
    verification = verify_archive(read_archive(file), trusted)
    for line in verification_lines(verification):
        typer.echo(line)
    if not verification.passed:
        raise typer.Exit(1)


def compare(
    a: Annotated[str, typer.Argument(help="A bundle file or a run id in the store.")],
    b: Annotated[str, typer.Argument(help="A bundle file or a run id in the store.")],
    chips_file: ChipsOption = None,
    store_path: StoreOption = None,
    include_unverified: UnverifiedOption = False,
    as_json: JsonOption = False,
) -> None:
    """Two runs side by side on their shared cells: headlines with intervals, the ratio as factors."""
    from rich.console import Console

    from accelbench.bundle.compare import compare as compare_sides
    from accelbench.bundle.compare import side_of
    from accelbench.hardware.chips import load_chips
    from accelbench.report.bundles import comparison_document, comparison_renderables
    from accelbench.report.terminal import print_json

    folder = store_dir(store_path)
    sides = side_of(a, folder), side_of(b, folder)
    pairings = compare_sides(*sides, load_chips(chips_file), include_unverified)
    if as_json:
        print_json(comparison_document(a, b, pairings))
        return
    console = Console(width=160)
    for item in comparison_renderables(pairings):
        console.print(item)


def publish(
    folder: Annotated[Path, typer.Argument(help="Folder of bundles (*.tar.gz, *.tgz, *.zip).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Folder of the site to write.")],
    chips_file: ChipsOption = None,
) -> None:
    """Write a static offline results site from many bundles: leaderboards of verified cells, filters."""
    from accelbench.bundle.publish import entries_of
    from accelbench.hardware.chips import load_chips
    from accelbench.report.site import site_html

    entries, listed = entries_of(folder, load_chips(chips_file))
    _site_folder(output)
    (output / "bundles").mkdir(exist_ok=True)
    for item in listed:
        shutil.copyfile(folder / item.name, output / "bundles" / item.name)
    (output / "index.html").write_text(site_html(entries, listed))
    verified = sum(item.verified for item in listed)
    typer.echo(f"wrote {output / 'index.html'}: {len(listed)} bundle(s), {verified} verified")


def _site_folder(output: Path) -> None:
    """``output`` as a new or empty folder, or an earlier site; UserError (one line) otherwise."""
    from accelbench.errors import UserError

    if output.exists() and not output.is_dir():
        raise UserError(f"-o {output}: it exists and is not a folder")
    earlier = output.is_dir() and any(output.iterdir()) and not (output / "index.html").is_file()
    if earlier:
        raise UserError(f"-o {output}: a folder that is not empty and holds no earlier site")
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"-o {output}: cannot create it ({exc.strerror or exc})") from None


def register(app: typer.Typer) -> None:
    """Add ``bundle``, ``verify``, ``compare`` and ``publish`` to the CLI app."""
    app.command()(bundle)
    app.command()(verify)
    app.command()(compare)
    app.command()(publish)
