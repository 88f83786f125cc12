# gpt2viz as a container: the app on port 8501, as a non-root user, with a health check.
# Build:  docker build -t gpt2viz .
#         (torch from PyPI is a CUDA build of several GB; pass --build-arg TORCH_INDEX=<PyTorch's CPU
#          wheel index URL> for the CPU build)
# Run:    docker run -p 8501:8501 -v ~/.cache/huggingface:/home/app/.cache/huggingface:ro gpt2viz
# Replicas behind nginx (deploy/nginx.conf.template): one STREAMLIT_SERVER_COOKIE_SECRET for all of
#         them; see docs/deploy.md. Not built here (no Docker engine on the project machines).
FROM python:3.11-slim

ARG TORCH_INDEX=""
# a class server: no uploads or downloads on a visitor's click unless the operator passes -e ...=1
# (docs/deploy.md, "Uploads")
ENV PYTHONDONTWRITEBYTECODE=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    GPT2VIZ_TRACE_BUDGET_MB=2048 GPT2VIZ_THREADS=1 GPT2VIZ_ALLOW_UPLOAD=0 GPT2VIZ_ALLOW_DOWNLOAD=0

RUN useradd --create-home --uid 1000 app
WORKDIR /home/app/gpt2viz
COPY requirements.txt .
RUN if [ -n "$TORCH_INDEX" ]; then pip install --index-url "$TORCH_INDEX" torch==2.13.0; fi \
 && pip install -r requirements.txt
COPY --chown=app:app . .
RUN pip install --no-deps .

USER app
EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).status != 200)"
# the installed command, as on any machine: serve.py, app.py behind the gate that lets 2 uploads arrive
# at once (where uploads are turned on), with .streamlit/config.toml's settings
CMD ["gpt2viz", "app", "--server.port=8501", "--server.address=0.0.0.0", "--server.headless=true"]
