"""Requests pipelined on one connection (sent in one burst, before any response).

Responses must come back in request order, and a request must see the catalog changes
(CreateTopics, DeleteTopics, topic auto-creation by Metadata) of the requests before
it, as with Kafka, which processes a connection's requests one at a time. Encoded with
kafka-python's protocol classes on a raw socket.
"""
from __future__ import annotations

import socket
import struct
import time
import uuid

from kafka.protocol.admin import CreateTopicsRequest, CreateTopicsResponse, DeleteTopicsRequest, \
    DeleteTopicsResponse
from kafka.protocol.consumer import FetchRequest, FetchResponse
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from helpers import recv_frame

RESPONSES = {0: ProduceResponse, 1: FetchResponse, 3: MetadataResponse, 19: CreateTopicsResponse,
             20: DeleteTopicsResponse}


def records(values):
    b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    for v in values:
        b.append(int(time.time() * 1000), None, v)
    b.close()
    return b.buffer()


def produce(topic, values):
    part = ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=records(values))
    return ProduceRequest[9](transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[part])])


def fetch(topic, offset):
    part = FetchRequest.FetchTopic.FetchPartition(
        partition=0, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
        log_start_offset=-1, partition_max_bytes=1 << 20)
    return FetchRequest[12](replica_id=-1, max_wait_ms=5000, min_bytes=1, max_bytes=1 << 20,
                            isolation_level=0, session_id=0, session_epoch=-1,
                            topics=[FetchRequest.FetchTopic(topic=topic, partitions=[part])],
                            forgotten_topics_data=[], rack_id="")


def create(topic):
    t = CreateTopicsRequest.CreatableTopic(name=topic, num_partitions=1, replication_factor=1,
                                           assignments=[], configs=[])
    return CreateTopicsRequest[7](topics=[t], timeout_ms=5000, validate_only=False)


def delete(topic):
    return DeleteTopicsRequest[6](topics=[DeleteTopicsRequest.DeleteTopicState(name=topic)],
                                  timeout_ms=5000)


def metadata(topic):
    return MetadataRequest[12](topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                               allow_auto_topic_creation=True)


def pipeline(bootstrap, requests):
    """Sends every request in one write, then reads the responses in order."""
    host, port = bootstrap.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=30)
    try:
        burst = b""
        for i, r in enumerate(requests):
            r.with_header(correlation_id=100 + i, client_id="pipeline-test")
            burst += r.encode(header=True, framed=True)
        s.sendall(burst)
        out = []
        for i, r in enumerate(requests):
            data = recv_frame(s)
            assert struct.unpack(">i", data[:4])[0] == 100 + i, f"response {i} out of order"
            out.append(RESPONSES[r.API_KEY].decode(data, version=r.API_VERSION, header=True))
        return out
    finally:
        s.close()


def produce_result(r):
    """(error code, base offset) of the single partition of a Produce response."""
    p = r.responses[0].partition_responses[0]
    return p.error_code, p.base_offset


def test_pipelined_requests_see_earlier_catalog_changes(broker):
    t = "pipe-" + uuid.uuid4().hex[:8]
    created, p1, f1, deleted, p2, meta, p3 = pipeline(broker.bootstrap, [
        create(t), produce(t, [b"a", b"b"]), fetch(t, 0), delete(t), produce(t, [b"c"]),
        metadata(t), produce(t, [b"d"]),
    ])
    assert created.topics[0].error_code == 0, created
    assert produce_result(p1) == (0, 0)
    fetched = f1.responses[0].partitions[0]
    assert fetched.error_code == 0, f1
    values = [rec.value for batch in MemoryRecords(fetched.records) for rec in batch]
    assert values[:2] == [b"a", b"b"], values
    assert deleted.responses[0].error_code == 0, deleted
    # The topic is gone for the request right behind the deletion ...
    assert produce_result(p2)[0] == 3  # UNKNOWN_TOPIC_OR_PARTITION
    # ... and back, empty, for the one behind the auto-creating Metadata.
    assert meta.topics[0].error_code == 0, meta
    assert produce_result(p3) == (0, 0)
