"""``keras.utils.get_file``: a file from the Keras cache, where Keras would have downloaded it.

hybridtf never downloads: ``get_file`` returns the path of a file already in the cache
(``$KERAS_HOME`` or ``~/.keras``, then ``cache_subdir``), checks its hash when one is given,
and extracts archives when asked; for a file that is not there it raises an error saying
where to put it.
"""
import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.parse
import zipfile

ARCHIVE_FORMATS = ("tar", "zip")


def keras_home():
    """Keras's home directory: ``$KERAS_HOME``, else ``~/.keras``."""
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return os.path.expanduser(home)


def _cache_dirs(cache_dir):
    """Where Keras caches files: ``cache_dir``, or ``/tmp/.keras`` when that is not
    writable (Keras's fallback); both are looked in."""
    base = os.path.expanduser(cache_dir) if cache_dir is not None else keras_home()
    dirs = [base]
    if not os.access(base, os.W_OK):
        dirs.append(os.path.join("/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir(),
                                 ".keras"))
    return dirs


def hash_file(fpath, algorithm="sha256", chunk_size=65535):
    """The hex digest of the file at ``fpath``: ``"sha256"`` or ``"md5"`` (``"auto"``:
    sha256)."""
    hasher = hashlib.md5() if algorithm == "md5" else hashlib.sha256()
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            hasher.update(chunk)
    return hasher.hexdigest()


def _algorithm(algorithm, file_hash):
    """``"auto"`` resolved: sha256 for a 64-digit hash, else md5."""
    if algorithm == "auto":
        return "sha256" if len(str(file_hash)) == 64 else "md5"
    return algorithm


def validate_file(fpath, file_hash, algorithm="auto", chunk_size=65535):
    """Whether the file's hash is ``file_hash`` (``algorithm``: ``"sha256"``, ``"md5"``, or
    ``"auto"``: sha256 for a 64-digit hash, else md5)."""
    return hash_file(fpath, _algorithm(algorithm, file_hash), chunk_size) == str(file_hash)


def _check_member(name, target):
    """Refuses an archive member that would land outside ``target``."""
    path = os.path.realpath(os.path.join(target, name))
    if os.path.commonpath([path, os.path.realpath(target)]) != os.path.realpath(target):
        raise ValueError(f"get_file: the archive member {name!r} would be extracted outside "
                         f"{target}; the archive is refused.")


def extract_archive(file_path, path=".", archive_format="auto"):
    """Extracts the tar (``.tar``, ``.tar.gz``, ``.tar.bz2``) or zip archive ``file_path``
    into ``path``; False when it is not an archive of ``archive_format`` (``"auto"``: tar or
    zip; a list; None: none).  The directory appears whole or not at all."""
    if archive_format is None:
        return False
    formats = list(ARCHIVE_FORMATS) if archive_format == "auto" else (
        [archive_format] if isinstance(archive_format, str) else list(archive_format))
    for kind in formats:
        if kind not in ARCHIVE_FORMATS:
            raise ValueError(f"get_file: archive_format must be 'auto', 'tar', 'zip' or None, "
                             f"got {kind!r}.")
        is_archive = tarfile.is_tarfile if kind == "tar" else zipfile.is_zipfile
        if not is_archive(file_path):
            continue
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".extracting-", dir=parent)
        try:
            if kind == "tar":
                with tarfile.open(file_path) as archive:
                    for member in archive.getmembers():
                        _check_member(member.name, staging)
                        if member.issym() or member.islnk():
                            _check_member(os.path.join(os.path.dirname(member.name),
                                                       member.linkname), staging)
                    if hasattr(tarfile, "data_filter"):     # Python >= 3.11.4 / 3.12
                        archive.extractall(staging, filter="data")
                    else:
                        archive.extractall(staging)
            else:
                with zipfile.ZipFile(file_path) as archive:
                    for name in archive.namelist():
                        _check_member(name, staging)
                    archive.extractall(staging)
            if os.path.isdir(path):
                shutil.rmtree(path)
            os.replace(staging, path)
        finally:
            if os.path.isdir(staging):
                shutil.rmtree(staging)
        return True
    return False


def get_file(fname=None, origin=None, untar=False, md5_hash=None, file_hash=None,
             cache_subdir="datasets", hash_algorithm="auto", extract=False,
             archive_format="auto", cache_dir=None, force_download=False):
    """The path of a file in the Keras cache: ``cache_dir`` (default ``$KERAS_HOME`` or
    ``~/.keras``) / ``cache_subdir`` / ``fname`` -- where Keras's ``get_file`` saves what it
    downloads from ``origin``.

    hybridtf never downloads: the file must already be there (downloaded by Keras, or by
    hand).  Otherwise, and for ``force_download=True``, FileNotFoundError says where to put
    it.

    Args:
      fname: the file's name (default: the last part of ``origin``'s path).
      origin: the URL the file comes from (named in errors; required, as in Keras).
      file_hash (or md5_hash): the expected sha256 or md5 hex digest; a cached file with
        another one is an error.  ``hash_algorithm``: ``"sha256"``, ``"md5"`` or ``"auto"``.
      extract (or untar): extract the archive (tar or zip, ``archive_format``) and return the
        directory it was extracted to -- Keras's ``<name>_extracted`` next to it (or
        ``<fname>`` when ``fname`` has no extension; the archive is then
        ``<fname>_archive``).  An archive already extracted is not extracted again.
      cache_subdir: the subdirectory of the cache (an absolute path is used as it is).
      cache_dir: the cache directory instead of ``$KERAS_HOME`` / ``~/.keras``.

    Returns:
      The file's path (the extracted directory's with ``extract``).
    """
    if origin is None:
        raise ValueError('get_file: please specify the "origin" argument (URL of the file '
                         "to download).")
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    given_name = os.fspath(fname) if fname is not None else None
    name = given_name or os.path.basename(urllib.parse.urlsplit(origin).path)
    if not name:
        raise ValueError(f"get_file: can't parse the file name from the origin provided: "
                         f"{origin!r}. Please specify the `fname` argument.")
    if os.sep in name:
        raise ValueError(f"get_file: paths are no longer accepted as the `fname` argument. To "
                         f"specify the file's parent directory, use the `cache_dir` argument. "
                         f"Received: fname={name}")
    for datadir in (os.path.join(base, cache_subdir) for base in _cache_dirs(cache_dir)):
        archive, extracted = _targets(datadir, name, given_name, extract or untar)
        if os.path.exists(archive) or (extracted and os.path.isdir(extracted)):
            break
    else:
        datadir = os.path.join(_cache_dirs(cache_dir)[0], cache_subdir)
        archive, extracted = _targets(datadir, name, given_name, extract or untar)
        if force_download:
            raise FileNotFoundError(
                f"get_file: force_download=True asks to download {origin}, but hybridtf never "
                f"downloads. Download it yourself and save it as {archive}.")
        raise FileNotFoundError(
            f"get_file: {name} is not in the Keras cache (no file at {archive}). hybridtf "
            f"never downloads: download {origin} yourself and save it there (the cache is "
            f"$KERAS_HOME/{cache_subdir}, else ~/.keras/{cache_subdir}; cache_dir= chooses "
            "another).")
    if force_download:
        raise FileNotFoundError(
            f"get_file: force_download=True asks to download {origin} again, but hybridtf "
            f"never downloads; the cached copy is {archive}. Replace it yourself and call "
            "get_file without force_download.")
    if os.path.exists(archive):
        if file_hash is not None and not validate_file(archive, file_hash, hash_algorithm):
            raise ValueError(
                f"get_file: the cached file {archive} does not match the expected "
                f"{_algorithm(hash_algorithm, file_hash)} hash {file_hash} (it "
                "is incomplete or outdated). hybridtf never downloads: replace it with a "
                f"fresh copy of {origin}.")
        if extracted and not os.path.isdir(extracted):
            if not extract_archive(archive, extracted, "tar" if untar else archive_format):
                raise ValueError(f"get_file: could not extract {archive}: it is not a "
                                 f"{archive_format if not untar else 'tar'} archive.")
    return extracted or archive


def _targets(datadir, name, given_name, extract):
    """``(archive path, extraction directory or None)`` as Keras 3 names them."""
    if not extract:
        return os.path.join(datadir, name), None
    if given_name and "." in name:
        stem = name[:name.find(".")]
        return os.path.join(datadir, name), os.path.join(datadir, f"{stem}_extracted")
    return os.path.join(datadir, f"{name}_archive"), os.path.join(datadir, name)
