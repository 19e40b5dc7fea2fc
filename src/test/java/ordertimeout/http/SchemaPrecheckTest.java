package ordertimeout.http;

import io.vertx.core.Vertx;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.math.BigInteger;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The prechecks say yes only where the contract's validators do, and they do say yes to ordinary
 * requests (else they would spare nothing): ordinary requests, then tens of thousands of mutated ones
 * (wrong types, numbers written every way, strange strings, unknown and missing fields).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SchemaPrecheckTest {
  private static final List<String> ODD_STRINGS = List.of("", " ", "SKU-1\n", "SKU-1\r\n", "a b", "é", "SKU\u0000",
      "x".repeat(64), "x".repeat(65), "a+b", "7417334514307825665", "99999999999999999999", "-1", "1.5", "physical",
      "virtual", "PHYSICAL", "checkout-8f14e45f", "\u2028", "~", "!", "\"", "null");

  private Vertx vertx;
  private ContractChecks contract;

  @BeforeAll
  void load() {
    vertx = Vertx.vertx();
    AppConfig config = AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), name -> null));
    contract = TestService.await(ContractChecks.load(vertx, config));
  }

  @AfterAll
  void stop() {
    TestService.await(vertx.close());
  }

  @Test
  void ordinaryRequestsPassThePrechecksAlone() {
    for (String body : List.of(
        "{\"userId\":\"u-1\",\"items\":[{\"sku\":\"SKU-1\",\"qty\":2}]}",
        "{\"userId\":\"u-2\",\"category\":\"virtual\",\"items\":[{\"sku\":\"SKU-2\",\"qty\":3},{\"sku\":\"SKU-1\",\"qty\":1}],\"timeoutSeconds\":600}")) {
      assertThat(contract.verdicts("createOrder", "body", Json.decodeValue(body))).isEqualTo(new ContractChecks.Verdicts(true, true));
    }
    assertThat(contract.verdicts("createOrder", "Idempotency-Key", "checkout-8f14e45f")).isEqualTo(new ContractChecks.Verdicts(true, true));
    assertThat(contract.verdicts("payOrder", "id", "7417334514307825665")).isEqualTo(new ContractChecks.Verdicts(true, true));
    assertThat(contract.verdicts("setInventory", "body", new JsonObject().put("available", 100))).isEqualTo(new ContractChecks.Verdicts(true, true));
  }

  @Test
  void aPrecheckNeverAcceptsWhatItsValidatorRefuses() {
    Random random = new Random(20261130);
    int acceptedByBoth = 0;
    int leftToTheValidator = 0;
    for (int i = 0; i < 30_000; i++) {
      Object body = Json.decodeValue(Json.encode(mutate(validCreate(random), random, 1 + random.nextInt(3))));
      ContractChecks.Verdicts verdicts = contract.verdicts("createOrder", "body", body);
      assertThat(verdicts.precheckAccepts()).isNotNull();
      if (verdicts.precheckAccepts()) {
        assertThat(verdicts.valid()).as("accepted by the precheck, refused by the validator: %s", body).isTrue();
        acceptedByBoth++;
      } else if (verdicts.valid()) {
        leftToTheValidator++;
      }
    }
    System.out.printf("SchemaPrecheckTest: of 30,000 mutated creates, %d accepted by the precheck, %d valid ones left to the validator%n",
        acceptedByBoth, leftToTheValidator);
    assertThat(acceptedByBoth).isGreaterThan(1_000);

    for (String key : ODD_STRINGS) {
      for (String[] parameter : new String[][] {{"createOrder", "Idempotency-Key"}, {"payOrder", "id"}, {"setInventory", "sku"}}) {
        ContractChecks.Verdicts verdicts = contract.verdicts(parameter[0], parameter[1], key);
        if (verdicts.precheckAccepts()) {
          assertThat(verdicts.valid()).as("%s %s '%s'", parameter[0], parameter[1], key).isTrue();
        }
      }
    }
  }

  private static JsonObject validCreate(Random random) {
    JsonArray items = new JsonArray();
    for (int i = 0, n = 1 + random.nextInt(3); i < n; i++) {
      items.add(new JsonObject().put("sku", "SKU-" + random.nextInt(1000)).put("qty", 1 + random.nextInt(5)));
    }
    JsonObject body = new JsonObject().put("userId", "u-" + random.nextInt(100)).put("items", items);
    if (random.nextBoolean()) body.put("category", random.nextBoolean() ? "physical" : "virtual");
    if (random.nextBoolean()) body.put("timeoutSeconds", 1 + random.nextInt(3600));
    return body;
  }

  /** Changes a field of the object, or of one of its items, a few times over. */
  private static JsonObject mutate(JsonObject body, Random random, int times) {
    for (int t = 0; t < times; t++) {
      JsonObject target = body;
      if (random.nextBoolean() && body.getValue("items") instanceof JsonArray items && !items.isEmpty()
          && items.getValue(0) instanceof JsonObject item) {
        target = item;
      }
      List<String> names = List.of("userId", "category", "items", "timeoutSeconds", "sku", "qty", "coupon");
      String name = names.get(random.nextInt(names.size()));
      if (random.nextInt(5) == 0) target.remove(name); else target.put(name, oddValue(random));
    }
    return body;
  }

  private static Object oddValue(Random random) {
    return switch (random.nextInt(14)) {
      case 0 -> null;
      case 1 -> random.nextBoolean();
      case 2 -> random.nextInt(20) - 5;
      case 3 -> (double) (random.nextInt(5) + 1);
      case 4 -> random.nextInt(5) + 0.5;
      case 5 -> Long.MAX_VALUE - random.nextInt(3);
      case 6 -> BigInteger.TWO.pow(70);
      case 7 -> random.nextInt(700_000);
      case 8 -> 604_800 + random.nextInt(3) - 1;
      case 9 -> 10_000 + random.nextInt(3) - 1;
      case 10 -> new JsonObject().put("sku", "SKU-1").put("qty", 1);
      case 11 -> new JsonArray().add(new JsonObject().put("sku", ODD_STRINGS.get(random.nextInt(ODD_STRINGS.size()))).put("qty", 1));
      case 12 -> new JsonArray(java.util.Collections.nCopies(random.nextInt(60), new JsonObject().put("sku", "S").put("qty", 1)));
      default -> ODD_STRINGS.get(random.nextInt(ODD_STRINGS.size()));
    };
  }
}
