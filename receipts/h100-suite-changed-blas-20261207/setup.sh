# sourced by each call: wheels into /tmp/site once per machine, the campaign console script on PATH
if [ ! -f /tmp/setup.done ]; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>&1 | tail -2
  PYTHONPATH=/tmp/site:$PWD python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -2
  touch /tmp/setup.done
fi
export PYTHONPATH=/tmp/site:$PWD
export PATH=$HOME/.local/bin:/usr/local/bin:$PATH
export PYTHONUNBUFFERED=1
