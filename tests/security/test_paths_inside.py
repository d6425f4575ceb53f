"""The one path rule (privaudit._files): nothing read or written leaves its folder."""

from __future__ import annotations

import os

import pytest

from privaudit._files import (
    atomic_write_text,
    check_inside,
    mkdir_inside,
    open_inside,
    path_inside,
    read_text_inside,
)
from privaudit.exceptions import OutsideFolderError


@pytest.fixture()
def folders(tmp_path):
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    return root, outside


@pytest.mark.parametrize("part", ["../outside/secret.txt", "/etc/passwd", "a/../../x"])
def test_climbing_or_absolute_names_are_refused(folders, part):
    root, _ = folders
    with pytest.raises(OutsideFolderError, match="outside the folder"):
        path_inside(root, part)


def test_link_out_at_the_file_or_on_the_way_is_refused(folders):
    root, outside = folders
    (root / "file.txt").symlink_to(outside / "secret.txt")
    (root / "sub").symlink_to(outside)
    for parts in (("file.txt",), ("sub", "secret.txt"), ("sub",)):
        with pytest.raises(OutsideFolderError):
            path_inside(root, *parts)
    with pytest.raises(OutsideFolderError):
        read_text_inside(root, "file.txt")


def test_dangling_link_out_is_refused_and_its_target_never_created(folders):
    root, outside = folders
    (root / "models.lock").symlink_to(outside / "created.lock")
    with pytest.raises(OutsideFolderError):
        open_inside(root, "models.lock", flags=os.O_RDWR | os.O_CREAT)
    assert not (outside / "created.lock").exists()


def test_link_inside_the_folder_is_allowed(folders):
    root, _ = folders
    (root / "real.txt").write_text("ok")
    (root / "alias.txt").symlink_to(root / "real.txt")
    assert path_inside(root, "alias.txt") == root / "alias.txt"
    assert check_inside(root / "real.txt", root) == root / "real.txt"


def test_open_inside_does_not_follow_a_final_link_even_to_inside(folders):
    # O_NOFOLLOW: a file privaudit opens is never opened through a link at all.
    root, _ = folders
    (root / "real.txt").write_text("ok")
    (root / "alias.txt").symlink_to(root / "real.txt")
    with pytest.raises(OutsideFolderError, match="symbolic link"):
        read_text_inside(root, "alias.txt")


def test_mkdir_and_atomic_write_refuse_a_planted_folder_link(folders):
    root, outside = folders
    (root / "results").symlink_to(outside)
    with pytest.raises(OutsideFolderError):
        mkdir_inside(root, "results", "one")
    with pytest.raises(OutsideFolderError):
        atomic_write_text(root / "results" / "x.json", "{}", root=root)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_atomic_write_with_root_writes_inside(folders):
    root, _ = folders
    atomic_write_text(root / "a" / "b" / "x.json", "{}", root=root)
    assert (root / "a" / "b" / "x.json").read_text() == "{}"


def test_atomic_write_replaces_a_planted_file_link_not_its_target(folders):
    root, outside = folders
    (root / "x.json").symlink_to(outside / "secret.txt")
    atomic_write_text(root / "x.json", "{}", root=root)
    assert not (root / "x.json").is_symlink()
    assert (outside / "secret.txt").read_text() == "secret"
