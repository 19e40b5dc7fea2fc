package ordertimeout.http;

import ordertimeout.support.Api;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A statement PostgreSQL cancels at the session's statement_timeout (SQLSTATE 57014, as a drain's cancel also gives)
 * answers 503 {@code database_unavailable} with Retry-After, not a 500, and its transaction changed nothing.
 */
class StatementTimeoutTest extends ServiceTestBase {
  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_DATABASE_INTAKE_STATEMENT_TIMEOUT_MILLIS", "300");
  }

  @AfterEach
  void dropSlowKeys() {
    Sql.executeDdl("DROP TRIGGER IF EXISTS slow_key ON idempotency_keys");
    Sql.execute("DROP FUNCTION IF EXISTS slow_key()");
  }

  @Test
  void aCreateWhoseStatementRunsPastTheTimeoutAnswers503AndChangesNothing() {
    api.setStock("SKU-SLOW", 10);
    Sql.execute("CREATE FUNCTION slow_key() RETURNS trigger LANGUAGE plpgsql AS $$ "
        + "BEGIN PERFORM pg_sleep(1); RETURN NEW; END $$");
    Sql.executeDdl("CREATE TRIGGER slow_key BEFORE INSERT ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION slow_key()");

    Api.Response answer = api.createOrder("slow-key-1", orderBody("u-1", 600, "SKU-SLOW", 2));
    assertThat(answer.status()).as(answer.body()).isEqualTo(503);
    assertThat(answer.code()).isEqualTo("database_unavailable");
    assertThat(answer.raw().headers().firstValue("Retry-After")).hasValue("1");
    assertThat(Sql.count("SELECT count(*) FROM orders")).isZero();
    assertThat(api.stock("SKU-SLOW").getLong("available")).isEqualTo(10);

    dropSlowKeys();
    Api.Response again = api.createOrder("slow-key-1", orderBody("u-1", 600, "SKU-SLOW", 2));
    assertThat(again.status()).as(again.body()).isEqualTo(201);
    assertThat(api.stock("SKU-SLOW").getLong("available")).isEqualTo(8);
  }
}
