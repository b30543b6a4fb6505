// A real Kafka client for the cross-language checks, run with Java's
// source-file launcher on the broker's classpath (kafka-clients), so the
// checks need no client library of their own:
//
//   java -cp 'kafka/lib/*' KafkaRecords.java produce BOOTSTRAP TOPIC < records
//   java -cp 'kafka/lib/*' KafkaRecords.java consume BOOTSTRAP TOPIC N TIMEOUT_MS
//   java -cp 'kafka/lib/*' KafkaRecords.java follow BOOTSTRAP TOPIC
//   java -cp 'kafka/lib/*' KafkaRecords.java committed BOOTSTRAP GROUP TOPIC PARTITIONS TIMEOUT_MS
//   java -cp 'kafka/lib/*' KafkaRecords.java fill BOOTSTRAP TOPIC N VALUE_BYTES
//   java -cp 'kafka/lib/*' KafkaRecords.java ends BOOTSTRAP TOPIC
//   java -cp 'kafka/lib/*' KafkaRecords.java quota BOOTSTRAP CONSUMER_BYTES_PER_SEC
//
// produce reads lines "TIMESTAMP_MS<TAB>KEY<TAB>VALUE" and sends each as a
// record with that create time (so windows over it are deterministic), to
// the topic's partitions in turn, each in the order of its lines.
// consume prints "KEY<TAB>VALUE" per committed record (read_committed: an
// exactly-once sink's aborted transactions do not count) of every
// partition from its earliest offset, until N records and then a quiet
// second more (so duplicates would show), or the timeout.
// follow prints "ARRIVAL_MS<TAB>KEY<TAB>VALUE" per committed record of
// every partition from its earliest offset as it arrives (the soak's
// latency), until killed.
// committed waits until GROUP has committed offsets with metadata for
// partitions 0..PARTITIONS-1 of TOPIC (what KafkaIO's exactly-once sink
// stores per shard), and prints "PARTITION<TAB>METADATA" for each.
// fill sends N records of its own making (key "kI%100", a value of
// VALUE_BYTES), batched, to the topic's partitions in turn: millions in
// seconds, where produce's lines would be read and sent one by one.
// ends prints the sum of the topic's partitions' end offsets: the records
// a reader from the earliest offset has yet to read, before it reads.
// quota sets the broker's default consumer byte rate (a dynamic client
// quota for every client id): the broker throttles fetches past it.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class KafkaRecords {
  public static void main(String[] args) throws Exception {
    if (args.length == 3 && args[0].equals("produce")) {
      produce(args[1], args[2]);
    } else if (args.length == 5 && args[0].equals("consume")) {
      consume(args[1], args[2], Integer.parseInt(args[3]), Long.parseLong(args[4]));
    } else if (args.length == 3 && args[0].equals("follow")) {
      follow(args[1], args[2]);
    } else if (args.length == 5 && args[0].equals("fill")) {
      fill(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
    } else if (args.length == 3 && args[0].equals("ends")) {
      ends(args[1], args[2]);
    } else if (args.length == 3 && args[0].equals("quota")) {
      quota(args[1], Double.parseDouble(args[2]));
    } else if (args.length == 6 && args[0].equals("committed")) {
      committed(args[1], args[2], args[3], Integer.parseInt(args[4]), Long.parseLong(args[5]));
    } else {
      System.err.println("usage: produce BOOTSTRAP TOPIC | consume BOOTSTRAP TOPIC N TIMEOUT_MS"
          + " | follow BOOTSTRAP TOPIC | committed BOOTSTRAP GROUP TOPIC PARTITIONS TIMEOUT_MS"
          + " | fill BOOTSTRAP TOPIC N VALUE_BYTES | ends BOOTSTRAP TOPIC | quota BOOTSTRAP CONSUMER_BYTES_PER_SEC");
      System.exit(2);
    }
  }

  static void produce(String bootstrap, String topic) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("acks", "all");
    // Sends in flight together still land in order (and once).
    p.put("enable.idempotence", "true");
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    int n = 0;
    // Not waited for one by one (100,000 records would take minutes):
    // every send's result is checked, a thousand at a time.
    List<Future<?>> sent = new ArrayList<>();
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      // Round robin over the partitions: a partition left empty would hold
      // KafkaIO's create-time watermark back for good.
      int partitions = producer.partitionsFor(topic).size();
      for (String line; (line = in.readLine()) != null; ) {
        String[] f = line.split("\t", 3);
        if (f.length != 3) {
          throw new IllegalArgumentException("line " + (n + 1) + ": want TIMESTAMP_MS<TAB>KEY<TAB>VALUE, got " + line);
        }
        sent.add(producer.send(new ProducerRecord<>(topic, n % partitions, Long.parseLong(f[0]), f[1], f[2])));
        n++;
        if (sent.size() == 1000) {
          for (Future<?> s : sent) {
            s.get();
          }
          sent.clear();
        }
      }
      for (Future<?> s : sent) {
        s.get();
      }
    }
    System.err.println("produced " + n + " records to " + topic);
  }

  static void fill(String bootstrap, String topic, int n, int valueBytes) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("acks", "all");
    p.put("enable.idempotence", "true");
    // Large batches: the records are small, and per-request overhead
    // would otherwise bound the rate.
    p.put("linger.ms", "20");
    p.put("batch.size", String.valueOf(512 * 1024));
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    String value = "v".repeat(valueBytes);
    java.util.concurrent.atomic.AtomicReference<Exception> failed = new java.util.concurrent.atomic.AtomicReference<>();
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      int partitions = producer.partitionsFor(topic).size();
      for (int i = 0; i < n && failed.get() == null; i++) {
        producer.send(new ProducerRecord<>(topic, i % partitions, "k" + (i % 100), value),
            (meta, e) -> { if (e != null) failed.compareAndSet(null, e); });
      }
      producer.flush();
    }
    if (failed.get() != null) {
      throw failed.get();
    }
    System.err.println("filled " + topic + " with " + n + " records");
  }

  static void ends(String bootstrap, String topic) throws InterruptedException {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
      long sum = 0;
      for (long end : consumer.endOffsets(partitions(consumer, topic, System.currentTimeMillis() + 30000)).values()) {
        sum += end;
      }
      System.out.println(sum);
    }
  }

  static void quota(String bootstrap, double bytesPerSec) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    // A null client id is the default entity: every client without a
    // quota of its own.
    org.apache.kafka.common.quota.ClientQuotaEntity all = new org.apache.kafka.common.quota.ClientQuotaEntity(
        java.util.Collections.singletonMap(org.apache.kafka.common.quota.ClientQuotaEntity.CLIENT_ID, null));
    try (org.apache.kafka.clients.admin.Admin admin = org.apache.kafka.clients.admin.Admin.create(p)) {
      admin.alterClientQuotas(List.of(new org.apache.kafka.common.quota.ClientQuotaAlteration(all,
          List.of(new org.apache.kafka.common.quota.ClientQuotaAlteration.Op("consumer_byte_rate", bytesPerSec)))))
          .all().get();
    }
    System.err.println("consumer_byte_rate " + bytesPerSec + " for every client");
  }

  static void consume(String bootstrap, String topic, int want, long timeoutMs)
      throws InterruptedException {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    p.put("isolation.level", "read_committed");
    long deadline = System.currentTimeMillis() + timeoutMs;
    int got = 0;
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
      // Assigned, not subscribed: no consumer group to join and wait for.
      List<TopicPartition> parts = partitions(consumer, topic, deadline);
      consumer.assign(parts);
      consumer.seekToBeginning(parts);
      long quietUntil = Long.MAX_VALUE;
      while (System.currentTimeMillis() < Math.min(deadline, quietUntil)) {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
          System.out.println(r.key() + "\t" + r.value());
          got++;
        }
        if (got >= want && quietUntil == Long.MAX_VALUE) {
          quietUntil = System.currentTimeMillis() + 1000;
        }
      }
    }
    System.err.println("consumed " + got + " records from " + topic);
  }

  static void follow(String bootstrap, String topic) throws InterruptedException {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    p.put("isolation.level", "read_committed");
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
      List<TopicPartition> parts = partitions(consumer, topic, Long.MAX_VALUE);
      consumer.assign(parts);
      consumer.seekToBeginning(parts);
      while (true) {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
          System.out.println(System.currentTimeMillis() + "\t" + r.key() + "\t" + r.value());
        }
        System.out.flush();
      }
    }
  }

  // The topic's partitions, once it exists: the pipeline that writes it
  // may not have created it yet.
  static List<TopicPartition> partitions(KafkaConsumer<?, ?> consumer, String topic, long deadline)
      throws InterruptedException {
    while (true) {
      List<TopicPartition> parts = new ArrayList<>();
      for (PartitionInfo i : consumer.listTopics(Duration.ofSeconds(10)).getOrDefault(topic, List.of())) {
        parts.add(new TopicPartition(topic, i.partition()));
      }
      if (!parts.isEmpty()) {
        return parts;
      }
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException("topic " + topic + " does not exist");
      }
      Thread.sleep(500);
    }
  }

  static void committed(String bootstrap, String group, String topic, int partitions, long timeoutMs)
      throws InterruptedException {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("group.id", group);
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    Set<TopicPartition> parts = new HashSet<>();
    for (int i = 0; i < partitions; i++) {
      parts.add(new TopicPartition(topic, i));
    }
    long deadline = System.currentTimeMillis() + timeoutMs;
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
      while (true) {
        Map<TopicPartition, OffsetAndMetadata> got = consumer.committed(parts, Duration.ofSeconds(10));
        int have = 0;
        for (OffsetAndMetadata m : got.values()) {
          if (m != null && m.metadata() != null && !m.metadata().isEmpty()) {
            have++;
          }
        }
        if (have == partitions) {
          for (Map.Entry<TopicPartition, OffsetAndMetadata> e : got.entrySet()) {
            System.out.println(e.getKey().partition() + "\t" + e.getValue().metadata());
          }
          return;
        }
        if (System.currentTimeMillis() > deadline) {
          throw new IllegalStateException(group + " has metadata for " + have + " of " + partitions + " partitions of " + topic);
        }
        Thread.sleep(200);
      }
    }
  }
}
