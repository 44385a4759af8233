#!/bin/bash
# Single-host Slurm 22.05 (Debian 12) for CI and the pilot tests: no systemd, no cgroups,
# runs as root. From ../shared/recipes/slurm-local-setup.sh (the recipe), with TEST_ACCOUNTS
# added (the steering tests need accounts of several users each).
#   SLURM_CPUS=8   virtual CPUs on the one node (can exceed real cores)
#   WITH_DBD=1     also install MariaDB + slurmdbd (needed for sacct, sshare,
#                  fair-share, age factor, sacctmgr accounts/QOS)
#   TEST_USERS="alice bob"   Unix users to create (and register in sacctmgr if WITH_DBD=1)
#   TEST_ACCOUNTS="physics:alice,bob chemistry:carol,dave"   with WITH_DBD=1, accounts and their
#                  users (the users are created; a user's default account is the first listed)
#   SKIP_APT=1     packages already installed: skip apt-get update/install
#   EXTRA_CONF="..."  more slurm.conf lines (the default array limit is raised to 4001 already)
set -euo pipefail
CPUS=${SLURM_CPUS:-8}
WITH_DBD=${WITH_DBD:-0}
TEST_USERS=${TEST_USERS:-}
export DEBIAN_FRONTEND=noninteractive

wait_for() { # wait_for SECONDS CMD...
  local t=$1; shift
  for _ in $(seq 1 $((t * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "timeout waiting for: $*" >&2; return 1
}

# 1. packages (postinst cannot start services: no systemd, policy-rc.d says 101)
PKGS="slurmctld slurmd slurm-client munge"
[ "$WITH_DBD" = 1 ] && PKGS="$PKGS slurmdbd mariadb-server"
if [ "${SKIP_APT:-0}" != 1 ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $PKGS >/dev/null
fi

TEST_ACCOUNTS=${TEST_ACCOUNTS:-}
TEST_ACCOUNT_USERS=""
for spec in $TEST_ACCOUNTS; do TEST_ACCOUNT_USERS="$TEST_ACCOUNT_USERS ${spec#*:}"; done
for u in $TEST_USERS ${TEST_ACCOUNT_USERS//,/ }; do id "$u" >/dev/null 2>&1 || useradd -m "$u"; done

# 2. munge: the postinst normally creates the key; make sure, then start by hand
[ -s /etc/munge/munge.key ] || mungekey -c -f -k /etc/munge/munge.key
chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
install -d -o munge -g munge -m 755 /run/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  runuser -u munge -- /usr/sbin/munged
  wait_for 10 sh -c 'munge -n | unmunge'
fi

# 3. optional accounting DB
if [ "$WITH_DBD" = 1 ]; then
  install -d -o mysql -g mysql /run/mysqld
  if ! mysqladmin ping >/dev/null 2>&1; then
    (/usr/sbin/mariadbd --user=mysql >/var/log/mariadbd.out 2>&1 &)
    wait_for 30 mysqladmin ping
  fi
  mysql -e "CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurmpw';
            GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;"
  cat > /etc/slurm/slurmdbd.conf <<'EOF'
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
DebugLevel=info
LogFile=/var/log/slurm/slurmdbd.log
PidFile=/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=slurmpw
StorageLoc=slurm_acct_db
EOF
  chmod 600 /etc/slurm/slurmdbd.conf          # slurmdbd refuses a readable conf
fi

# 4. slurm.conf
install -d /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
if [ "$WITH_DBD" = 1 ]; then
  ACCT="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStorageEnforce=associations
JobAcctGatherType=jobacct_gather/linux
PriorityWeightFairshare=10000
PriorityWeightAge=1000
PriorityDecayHalfLife=0-00:10:00
PriorityCalcPeriod=1"
else
  ACCT="AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none"
fi
cat > /etc/slurm/slurm.conf <<EOF
ClusterName=ci
SlurmctldHost=localhost
SlurmUser=root
AuthType=auth/munge
MailProg=/bin/true
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
PriorityType=priority/multifactor
PriorityWeightPartition=1000
JobCompType=jobcomp/filetxt
JobCompLoc=/var/log/slurm/jobcomp.log
$ACCT
SlurmdParameters=config_overrides
MaxArraySize=4001
${EXTRA_CONF:-}
ReturnToService=2
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF

# 5. daemons (each forks into the background and writes its pid file)
if [ "$WITH_DBD" = 1 ]; then
  [ -s /run/slurmdbd.pid ] && kill -0 "$(cat /run/slurmdbd.pid)" 2>/dev/null || slurmdbd
  wait_for 30 sacctmgr -n list cluster
  sacctmgr -i add cluster ci >/dev/null || true
  sacctmgr -i add account ci_default Cluster=ci >/dev/null || true
  sacctmgr -i add user root Account=ci_default >/dev/null || true
  for u in $TEST_USERS; do
    sacctmgr -i add account "acct_$u" Cluster=ci >/dev/null || true
    sacctmgr -i add user "$u" Account="acct_$u" >/dev/null || true
  done
  for spec in $TEST_ACCOUNTS; do
    sacctmgr -i add account "${spec%%:*}" Cluster=ci >/dev/null || true
    IFS=, read -r -a users <<<"${spec#*:}"
    for u in "${users[@]}"; do
      sacctmgr -i add user "$u" Account="${spec%%:*}" >/dev/null || true
    done
  done
fi
[ -s /run/slurmctld.pid ] && kill -0 "$(cat /run/slurmctld.pid)" 2>/dev/null || slurmctld
wait_for 60 scontrol ping
[ -s /run/slurmd.pid ] && kill -0 "$(cat /run/slurmd.pid)" 2>/dev/null || slurmd -N localhost
# Up: idle, or already running jobs (a cluster this script started before).
wait_for 60 sh -c 'sinfo -h -o %T | grep -qxE "idle|mixed|allocated|completing"'
sinfo
