"""ringtrain_build.py — a PEP 517 build backend for the pure-Python ringtrain
package, so that `pip install ./python` needs nothing from the network (pip's
isolated build gets no setuptools offline).  It writes a wheel of
ringtrain/*.py with the metadata pip needs, and nothing else."""
import base64
import hashlib
import os
import re
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _version():
    """ringtrain's one version: the top CMakeLists.txt's project() line."""
    with open(os.path.join(os.path.dirname(HERE), "CMakeLists.txt")) as f:
        m = re.search(r"project\(ringtrain VERSION ([0-9][0-9.]*)", f.read())
    if not m:
        raise RuntimeError("ringtrain_build: no `project(ringtrain VERSION ...)` in CMakeLists.txt")
    return m.group(1)


NAME, VERSION = "ringtrain", _version()
DIST_INFO = "%s-%s.dist-info" % (NAME, VERSION)
METADATA = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
            "Summary: The ringtrain Run API from Python (ctypes over libringtrain)\n"
            "Requires-Python: >=3.8\n" % (NAME, VERSION))
WHEEL = "Wheel-Version: 1.0\nGenerator: ringtrain_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _files():
    pkg = os.path.join(HERE, NAME)
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py"):
            with open(os.path.join(pkg, name), "rb") as f:
                yield "%s/%s" % (NAME, name), f.read()


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d\n" % (path, digest, len(data))


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = os.path.join(metadata_directory, DIST_INFO)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w") as f:
        f.write(METADATA)
    return DIST_INFO


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    wheel = "%s-%s-py3-none-any.whl" % (NAME, VERSION)
    record = ""
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        entries = list(_files()) + [(DIST_INFO + "/METADATA", METADATA.encode()),
                                    (DIST_INFO + "/WHEEL", WHEEL.encode())]
        for path, data in entries:
            z.writestr(path, data)
            record += _record_line(path, data)
        record += DIST_INFO + "/RECORD,,\n"
        z.writestr(DIST_INFO + "/RECORD", record)
    return wheel


def build_sdist(sdist_directory, config_settings=None):
    import tarfile
    base = "%s-%s" % (NAME, VERSION)
    path = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(path, "w:gz") as t:
        for rel in ["pyproject.toml", "_build/ringtrain_build.py"] + [p for p, _ in _files()]:
            t.add(os.path.join(HERE, rel), arcname="%s/%s" % (base, rel))
    return base + ".tar.gz"
