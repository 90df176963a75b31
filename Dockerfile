# One image for every process; the command picks the process:
#   ims-gateway (8080), ims-ideas (8081), ims-customers (8082), ims-webhooks (8083),
#   ims-analytics (8084), ims-mcp (8085), ims-similar-embedder (8086, probes and metrics only),
#   ims-similar (8087, the similar-ideas routes),
#   ideasctl (admin CLI; `ideasctl migrate` in the migration Job).
# Build: docker build -t idea-management:dev .

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# Build stage: install the project and its dependencies into a virtual environment. Anything a
# dependency needs to compile would be installed here and never reach the final image. The
# int8 all-mpnet-base-v2 file is made here too, with PyTorch (its CPU build) in a throwaway
# environment of its own that the step deletes: the image carries the file, not PyTorch.
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
COPY pyproject.toml README.md ./
COPY libs ./libs
COPY services ./services
RUN pip install --no-cache-dir . \
    && python -m services.similar.embedding \
    && MPNET_TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cpu" \
       python -m services.similar.build_mpnet \
    && pip uninstall --yes pip setuptools wheel

# Final stage: the virtual environment and an unprivileged user, nothing else.
FROM ${PYTHON_IMAGE} AS runtime
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
RUN groupadd --system --gid 10001 ims \
    && useradd --system --uid 10001 --gid ims --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin ims
COPY --from=build /opt/venv /opt/venv
# Numeric, so that Kubernetes can verify runAsNonRoot without looking the name up.
USER 10001:10001
EXPOSE 8080 8081 8082 8083 8084 8085 8087
CMD ["ims-gateway"]
