"""Extract a zip archive without letting an entry escape the target folder (a "zip slip")."""
import os

__all__ = ["safe_extract"]


def safe_extract(archive, target):
    """Extract the ``zipfile.ZipFile`` ``archive`` into ``target``; an entry with an absolute path or one that
    resolves outside ``target`` raises ValueError before anything is written."""
    root = os.path.realpath(target)
    for member in archive.infolist():
        name = member.filename
        if os.path.isabs(name) or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
            raise ValueError(f"Archive entry has absolute path: {name}")
        destination = os.path.realpath(os.path.join(root, name))
        if os.path.commonpath([root, destination]) != root:
            raise ValueError(f"Archive entry would escape the target directory: {name}")
    archive.extractall(root)
