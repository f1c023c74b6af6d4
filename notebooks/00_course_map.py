# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Course map
#
# The lessons are being written; this page will link each one as it lands. Planned lessons, in prerequisite order:
#
# 1. **01_mac: count the work.** FLOPs of a matrix multiply and of a transformer layer, arithmetic intensity, the roofline, bytes per parameter.
# 2. **02_nccl: move the data.** What each collective does, ring all-reduce step by step, the α–β cost model.
# 3. **03_parallelism: split the work.** Data, tensor, pipeline and ZeRO parallelism; the memory of each device; global batch; pipeline bubbles.
# 4. **04_communication_budget: budget the bytes.** The transfers a partition implies, exposed vs overlapped communication, choosing a partition.
#
# Planned labs: ring all-reduce, global batch, memory budget, pipeline schedule.
