# SPDX-License-Identifier: Apache-2.0
"""The pinned JAX virtual environments of the oracle and the JAX baseline, created on first use.

  current  <repo>/.venv-oracle         jax 0.10.2: the newest that installs on Debian 12's Python
                                       3.11; shard_map, pmap on shard_map, jax.random
  legacy   <repo>/.venv-oracle-legacy  jax 0.7.2: the last with the legacy pmap

Creating one needs PyPI once. Scripts call reexec_in() before importing jax.
"""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENVS = {"current": (".venv-oracle", "0.10.2"), "legacy": (".venv-oracle-legacy", "0.7.2")}


def venv_python(kind):
  """The venv's interpreter, creating the venv with its pinned jax if needed."""
  name, version = VENVS[kind]
  venv = os.path.join(REPO, name)
  python = os.path.join(venv, "bin", "python")
  if not os.path.exists(python):
    subprocess.check_call([sys.executable, "-m", "venv", venv])
    subprocess.check_call(
        [python, "-m", "pip", "install", "-q", f"jax=={version}", f"jaxlib=={version}"])
  return python


def reexec_in(kind, script):
  """Re-executes `script` (with this process's arguments) inside the venv, unless already there."""
  venv = os.path.join(REPO, VENVS[kind][0])
  if os.path.realpath(sys.prefix) == os.path.realpath(venv):
    return
  python = venv_python(kind)
  os.execv(python, [python, os.path.abspath(script)] + sys.argv[1:])
