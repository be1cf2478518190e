# The shasweep image: the scheduler and the bench worker of docker-compose.yml.
# GPU hosts build it with CUDA torch and MJWarp:
#   docker compose build --build-arg CONSTRAINTS=/dev/null --build-arg EXTRAS='[mjwarp]'
# (or set SHASWEEP_CONSTRAINTS and SHASWEEP_EXTRAS for docker-compose.yml).
FROM python:3.11-slim

RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/shasweep
COPY pyproject.toml README.md constraints-cpu.txt ./
COPY orchestrator ./orchestrator
COPY envruntime ./envruntime

ARG CONSTRAINTS=constraints-cpu.txt
ARG EXTRAS="[envruntime]"
RUN pip install --no-cache-dir -c "${CONSTRAINTS}" ".${EXTRAS}"

# Worktrees, bench logs and the host lock; writable by the repository owner's uid the worker runs as.
RUN mkdir -p /var/cache/shasweep && chmod 1777 /var/cache/shasweep
ENV SHASWEEP_HOME=/var/cache/shasweep \
    HOME=/tmp \
    PYTHONUNBUFFERED=1

EXPOSE 8786 8787
CMD ["shasweep", "--help"]
