"""A rate source into a noop sink, 1 s trigger, until killed.

Prints E2E_ENV=<value of TIDEGATE_E2E> and E2E_ARGS=<argv> at start, then E2E_FIRST_BATCH
once a micro-batch has completed, so tests can see the stream really runs.
"""

import os
import sys
import time

from pyspark.sql import SparkSession

print(f"E2E_ENV={os.environ.get('TIDEGATE_E2E', '')}", flush=True)
print(f"E2E_ARGS={sys.argv[1:]}", flush=True)
spark = SparkSession.builder.getOrCreate()
query = (
    spark.readStream.format("rate")
    .option("rowsPerSecond", 5)
    .load()
    .writeStream.format("noop")
    .trigger(processingTime="1 second")
    .start()
)
while query.lastProgress is None:
    time.sleep(0.2)
print("E2E_FIRST_BATCH", flush=True)
query.awaitTermination()
