//! The script that starts a test Slurm inside its own mount namespace, and what the nodes of a
//! cluster of several need from this machine (a free network, the processes to kill).

use crate::stack::random_hex;
use std::process::Command;

/// The script that runs inside the new mount namespace: private mounts, keys, configuration,
/// fake GPUs, the daemons, and a JWT for root written to `token` once slurmctld answers.
/// Arguments: chroot, run folder (inside the chroot), ctld port, slurmd port, rest port, GPUs per
/// node, nodes, the nodes' /24 network (`10.x.y`, used when there are several), a tag for
/// interface names, then pairs of (host folder, folder inside the chroot) to bind.
///
/// One node is `onramp0` on loopback. Several are `onramp0`, `onramp1`, … each in a network and
/// hostname namespace of its own (held by a `sleep`, whose pid is in `<run>/node<i>.pid`), with
/// its own address `10.x.y.(i+2)` on a bridge, which lives in one more namespace and reaches this
/// machine's at `10.x.y.1` (slurmctld's address). The chroot's `/etc/hosts` names them (and
/// localhost), in this mount namespace only, as a cluster's DNS would. Every namespace and interface goes when the
/// last process of the mount namespace does.
pub(super) const LAUNCHER: &str = r#"set -eu
C=$1; R=$2; H=$C$R; GPUS=$6; NODES=$7; NET=$8; TAG=$9
mount -t proc proc "$C/proc"
mount --rbind /sys "$C/sys"
mkdir -p "$H/munge" "$H/state" "$H/spool" "$H/dev" "$H/jobs"
CTLD=127.0.0.1
if [ "$NODES" -gt 1 ]; then
  CTLD=$NET.1
  unshare --net sleep infinity & SW=$!
  until [ "$(readlink /proc/$SW/ns/net)" != "$(readlink /proc/$$/ns/net)" ]; do sleep 0.05; done
  nsenter -t "$SW" -n ip link add br0 type bridge
  nsenter -t "$SW" -n ip link set br0 up
  ip link add "o$TAG" type veth peer name up0 netns "$SW"
  ip addr add "$CTLD/24" dev "o$TAG"
  ip link set "o$TAG" up
  nsenter -t "$SW" -n ip link set up0 master br0 up
  printf '127.0.0.1 localhost\n%s %s\n' "$CTLD" "$(hostname)" > "$H/hosts"
  for i in $(seq 0 $((NODES - 1))); do
    unshare --net --uts sh -c "hostname onramp$i; exec sleep infinity" & P=$!
    until [ "$(readlink /proc/$P/ns/net)" != "$(readlink /proc/$$/ns/net)" ]; do sleep 0.05; done
    nsenter -t "$SW" -n ip link add "n$i" type veth peer name eth0 netns "$P"
    nsenter -t "$SW" -n ip link set "n$i" master br0 up
    nsenter -t "$P" -n ip addr add "$NET.$((i + 2))/24" dev eth0
    nsenter -t "$P" -n ip link set eth0 up
    nsenter -t "$P" -n ip link set lo up
    echo "$P" > "$H/node$i.pid"
    printf '%s onramp%s\n' "$NET.$((i + 2))" "$i" >> "$H/hosts"
  done
else
  printf '127.0.0.1 localhost %s onramp0\n' "$(hostname)" > "$H/hosts"
fi
# The nodes' names, and localhost, which the chroot's bare /etc lacks (torchrun's rendezvous
# needs it), seen by this namespace only.
chmod 644 "$H/hosts"
[ -e "$C/etc/hosts" ] || : > "$C/etc/hosts"
mount --bind "$H/hosts" "$C/etc/hosts"
chmod 755 "$H" "$H/munge" "$H/jobs"
head -c 1024 /dev/urandom > "$H/munge.key"; chmod 600 "$H/munge.key"
head -c 32 /dev/urandom > "$H/jwt.key"; chmod 600 "$H/jwt.key"
for i in $(seq 0 $((GPUS - 1))); do mknod "$H/dev/gpu$i" c 195 "$i"; done
cat > "$H/slurm.conf" <<CONF
ClusterName=onramp
SlurmctldHost=$(hostname)($CTLD)
SlurmctldPort=$3
SlurmdPort=$4
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$R/munge/munge.socket
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$R/jwt.key
StateSaveLocation=$R/state
SlurmdSpoolDir=$R/spool
SlurmctldPidFile=$R/slurmctld.pid
SlurmdPidFile=$R/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
GresTypes=gpu
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
CONF
LAST=$((NODES - 1))
if [ "$NODES" -gt 1 ]; then
  # A node whose slurmd is gone is down after 10 s (the node-failure tests), not 5 minutes.
  # Each slurmd reads a copy that differs only in its pid file and spool folder (without
  # Slurm's multiple-slurmd build `%n` is not expanded, and a slurmd kills the pid it finds).
  printf 'SlurmdTimeout=10\nDebugFlags=NO_CONF_HASH\n' >> "$H/slurm.conf"
  for i in $(seq 0 "$LAST"); do
    echo "NodeName=onramp$i NodeAddr=$NET.$((i + 2)) CPUs=$(nproc) RealMemory=1024 Gres=gpu:$GPUS State=UNKNOWN"
  done >> "$H/slurm.conf"
  echo "PartitionName=debug Nodes=onramp[0-$LAST] Default=YES MaxTime=INFINITE State=UP" >> "$H/slurm.conf"
else
  echo "NodeName=onramp0 NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1024 Gres=gpu:$GPUS State=UNKNOWN" >> "$H/slurm.conf"
  echo "PartitionName=debug Nodes=onramp0 Default=YES MaxTime=INFINITE State=UP" >> "$H/slurm.conf"
fi
for i in $(seq 0 "$LAST"); do
  mkdir -p "$H/spool/onramp$i"
  sed -e "s|^SlurmdPidFile=.*|SlurmdPidFile=$R/slurmd-onramp$i.pid|" \
    -e "s|^SlurmdSpoolDir=.*|SlurmdSpoolDir=$R/spool/onramp$i|" "$H/slurm.conf" > "$H/slurm-onramp$i.conf"
done
echo "CgroupPlugin=disabled" > "$H/cgroup.conf"
if [ "$GPUS" -gt 0 ]; then
  printf 'AutoDetect=off\nNodeName=onramp[0-%d] Name=gpu File=%s/dev/gpu[0-%d]\n' "$LAST" "$R" $((GPUS - 1)) > "$H/gres.conf"
else
  echo "AutoDetect=off" > "$H/gres.conf"
fi
chmod 644 "$H"/*.conf
export SLURM_CONF=$R/slurm.conf
chroot "$C" /usr/sbin/munged -F --force --socket="$R/munge/munge.socket" --key-file="$R/munge.key" \
  --pid-file="$R/munged.pid" --log-file="$R/munged.log" --seed-file="$R/munge.seed" &
until [ -S "$H/munge/munge.socket" ]; do sleep 0.1; done
chroot "$C" /usr/sbin/slurmctld -D -i &
if [ "$NODES" -gt 1 ]; then
  for i in $(seq 0 "$LAST"); do
    nsenter -t "$(cat "$H/node$i.pid")" -n -u chroot "$C" /usr/sbin/slurmd -D -N "onramp$i" \
      -f "$R/slurm-onramp$i.conf" &
  done
else
  chroot "$C" /usr/sbin/slurmd -D -N onramp0 &
fi
SLURM_JWT=daemon chroot "$C" /usr/sbin/slurmrestd -u nobody -g nogroup -a rest_auth/jwt \
  -s openapi/slurmctld "127.0.0.1:$5" &
until chroot "$C" /usr/bin/scontrol token username=root lifespan=86400 > "$H/token.tmp" 2>/dev/null; do
  sleep 0.2
done
# Host folders bound into the chroot, in this namespace only (what a cluster has on every node).
shift 9
while [ $# -ge 2 ]; do
  [ -d "$C$2" ] || mkdir -p "$H/${2#"$R"/}"
  mount --bind "$1" "$C$2"
  shift 2
done
mv "$H/token.tmp" "$H/token"
wait
"#;

/// Every process's id.
fn pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
        .collect()
}

/// A `10.x.y` /24 that no interface of this machine is on, for a cluster's nodes.
pub(super) fn free_subnet() -> Result<String, String> {
    let taken = Command::new("ip")
        .args(["-4", "-o", "addr"])
        .output()
        .map_err(|e| format!("cannot run ip (apt-get install iproute2): {e}"))?;
    let taken = String::from_utf8_lossy(&taken.stdout).to_string();
    for _ in 0..64 {
        let r = u32::from_str_radix(&random_hex(4), 16).unwrap_or(0);
        let net = format!("10.{}.{}", 200 + (r >> 8) % 50, r & 0xff);
        if !taken.contains(&format!(" {net}.")) {
            return Ok(net);
        }
    }
    Err("no free 10.x.y network for the cluster".into())
}

/// This machine's address as a cluster's nodes reach it: loopback when the one node shares its
/// network, else the cluster network's first address (slurmctld's, see [`LAUNCHER`]).
pub(super) fn host_address(nodes: u32, subnet: &str) -> String {
    if nodes > 1 {
        format!("{subnet}.1")
    } else {
        "127.0.0.1".into()
    }
}

/// Kills every process `doomed` picks, again until none is left (one killed may have started
/// another meanwhile), three rounds at most.
pub(super) fn kill_all(doomed: impl Fn(u32) -> bool) {
    for _ in 0..3 {
        let mut found = false;
        for pid in pids().into_iter().filter(|&p| doomed(p)) {
            found = true;
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        if !found {
            break;
        }
    }
}
