# usage: pack.sh ROOT TARBALL [EXTRA...]: the whole root if its tarball is under 15 MiB, else its top-level files and status
R=$1; T=$2; shift 2
W=/tmp/keep/pack.$$; rm -rf $W; mkdir -p $W; cp "$@" $W/ 2>/dev/null
(cd $(dirname $R) && tar czf $W/root.tar.gz $(basename $R))
if [ $(stat -c %s $W/root.tar.gz) -gt 15000000 ]; then
  echo "root tarball $(stat -c %s $W/root.tar.gz) bytes: top-level files only"; rm $W/root.tar.gz
  (cd $(dirname $R) && find $(basename $R) -maxdepth 1 -type f | tar czf $W/root-top.tar.gz -T -)
fi
(cd $W && tar czf $T *); rm -rf $W; ls -la $T
