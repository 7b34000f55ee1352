"""Celery 5 (Debian's python3-celery, on kombu's SQS transport) against shared-sqs.

`python3 -m celery -A celery_app worker ...` runs the worker; `python3 celery_app.py X Y` sends
add(X, Y) and prints the task id. The worker logs "Task celery_app.add[ID] succeeded ...: X+Y".
Kombu's SQS transport talks through boto3 (Query protocol) and, in the worker, through its own
pycurl client (python3-pycurl), also Query.
"""
import os
import sys

from celery import Celery

# docs/clients.md quotes this block.
# --- app ---
# sqs://ACCESS_KEY:SECRET_KEY@HOST:PORT; kombu takes the endpoint from the host and port.
app = Celery("celery_app", broker=f"sqs://test:test@{os.environ['SHARED_SQS_HOST_PORT']}")
app.conf.broker_transport_options = {
    "region": "us-east-1",
    "is_secure": False,  # http://, not https://
    "wait_time_seconds": 1,  # long polls, short enough for the worker to stop quickly
}
app.conf.task_default_queue = os.environ.get("CELERY_QUEUE", "celery")
# --- end app ---


@app.task
def add(x, y):
    return x + y


if __name__ == "__main__":
    result = add.delay(int(sys.argv[1]), int(sys.argv[2]))
    print(result.id, flush=True)
