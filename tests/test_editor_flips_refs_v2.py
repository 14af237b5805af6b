"""Issue 24 item 3 (Z16): the offline editor's wrong decisions, by principle, second round.

Cases written here (not from any held-out set), in en zh ja de fr es pt ru ko and two languages with no vocabulary
in the rules config (Swahili, Icelandic), read through the real importer (OpenAI chat records). Table-driven; every
principle has rows of both decisions.

- a sentence that names only values the successful retry returned (and none only the deleted failure had: its
  wrong id, its typo, its error words) is no reference to the deleted failure, in any language; one that names the
  wrong value, or whose other clause speaks of the first attempt, still is;
- a read-only lookup that found nothing (``(integer) 0``, an empty output), through a wrapper or not, and was run
  again with a corrected argument is a failed call to delete; a different, wider question is not a correction;
- a rewritten final answer that drops the values only the failed receipt printed (the missing class, the failing
  task, ``FAILED``) while keeping the object's is a flip, in any language; one that keeps them is not;
- a payout, transfer or parcel on its way (``in_transit``) is a going state: a rewrite promising it has landed is a
  future claim; one that keeps the state is not.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from judge.model import Trajectory, number_turns
from judge.repair import offline_edit
from judge.repair.textref import Detectors
from judge.repair.validators import validate_edit
from judge.testing.builders import bash_chat, issue


def chat(query: str, steps: list[tuple[str, str, int] | str]) -> Trajectory:
    """Bash calls and assistant texts, each text its own assistant message."""
    return bash_chat(query, steps, record_id="z16")


def without_first_call(original: Trajectory) -> tuple[Trajectory, list[int]]:
    """The rewrite that drops the first call and its receipt and keeps everything else verbatim."""
    drop = {i for i, m in enumerate(original.messages)
            if any(c.id == "c1" for c in m.tool_calls) or (m.receipt is not None and m.receipt.call_id == "c1")}
    message_map = [i for i in range(len(original.messages)) if i not in drop]
    edited = original.model_copy(deep=True)
    edited.messages = [edited.messages[i] for i in message_map]
    number_turns(edited.messages)
    return edited, message_map


def final_rewritten(original: Trajectory, text: str) -> Trajectory:
    """The original with its final answer replaced by ``text``."""
    edited = original.model_copy(deep=True)
    edited.messages[-1].content = text
    return edited


# --- a sentence about the successful retry's values is no reference to the deleted failure ------------------------

def lookup(query: str, wrong: str, right: str, error: str, answer_value: str, answer: str) -> Trajectory:
    """A typo'd read that failed, its corrected retry, and a final answer."""
    return chat(query, [(wrong, error, 1), (right, answer_value, 0), answer])


RETRY_ONLY: list[tuple[str, Trajectory, bool]] = [
    ("en-kubectl-ns-typo", lookup("Which image does deploy/api run in namespace shop?",
        "kubectl get deploy api -n shpo -o jsonpath='{.spec.template.spec.containers[0].image}'",
        "kubectl get deploy api -n shop -o jsonpath='{.spec.template.spec.containers[0].image}'",
        'Error from server (NotFound): namespaces "shpo" not found', "registry.example/api:2.14.3",
        "deploy/api runs registry.example/api:2.14.3."), True),
    ("zh-record-get-typo", lookup("记录 recKp31 的负责人是谁？（表 tblOw2，Base bascnZh4）",
        "lark-cli base +record-get --base bascnZh4 --table tblOw2 --id recKp13",
        "lark-cli base +record-get --base bascnZh4 --table tblOw2 --id recKp31",
        "Error: 404 RecordNotFound: recKp13", '{"record_id": "recKp31", "负责人": "王敏"}',
        "recKp31 的负责人是王敏。"), True),
    ("ja-systemctl-unit-typo", lookup("nginx のステータスは？",
        "systemctl status ngnix --no-pager", "systemctl status nginx --no-pager",
        "Unit ngnix.service could not be found.", "● nginx.service - A high performance web server\n"
        "   Active: active (running) since Tue 2026-12-01 08:12:44 UTC; 2 days ago",
        "nginx.service は active (running) です（2026-12-01 08:12:44 UTC から）。"), True),
    ("de-git-tag-typo", lookup("Auf welchen Commit zeigt das Tag v3.8.1?",
        "git rev-list -n 1 v3.81", "git rev-list -n 1 v3.8.1",
        "fatal: ambiguous argument 'v3.81': unknown revision or path not in the working tree.", "9c41e07d2b",
        "Das Tag v3.8.1 zeigt auf 9c41e07d2b."), True),
    ("fr-psql-table-typo", lookup("Combien de factures dans la table factures_2026 ?",
        "psql -d compta -c 'select count(*) from facture_2026'",
        "psql -d compta -c 'select count(*) from factures_2026'",
        'ERROR:  relation "facture_2026" does not exist', " count \n-------\n  1184\n(1 row)",
        "La table factures_2026 contient 1184 factures."), True),
    ("es-aws-bucket-typo", lookup("¿Cuántos objetos hay en s3://informes-q4/2026/?",
        "aws s3 ls s3://informes-q5/2026/ --recursive --summarize",
        "aws s3 ls s3://informes-q4/2026/ --recursive --summarize",
        "An error occurred (NoSuchBucket) when calling the ListObjectsV2 operation: The specified bucket does not exist",
        "2026-11-30 09:12:01     20481 2026/ventas.csv\n\nTotal Objects: 37\n   Total Size: 912384",
        "Hay 37 objetos en s3://informes-q4/2026/ (912384 bytes en total)."), True),
    ("pt-helm-release-typo", lookup("Qual a revisão do release pagamentos?",
        "helm status pagamento -n prod", "helm status pagamentos -n prod",
        "Error: release: not found", "NAME: pagamentos\nNAMESPACE: prod\nSTATUS: deployed\nREVISION: 42",
        "O release pagamentos está em REVISION 42 (deployed)."), True),
    ("ru-journalctl-unit-typo", lookup("Когда последний раз перезапускался сервис billingd?",
        "journalctl -u bilingd -n 1 --no-pager", "journalctl -u billingd -n 1 --no-pager",
        "-- No entries --", "Dec 02 23:10:05 app-3 systemd[1]: Started billingd.service.",
        "billingd.service запущен Dec 02 23:10:05 на app-3."), True),
    ("ko-redis-key-typo", lookup("세션 키 sess:7f2a 의 TTL은?",
        "redis-cli -n 1 TTL sess:7f2b", "redis-cli -n 1 TTL sess:7f2a",
        "ERR no such key sess:7f2b", "(integer) 5312",
        "sess:7f2a 의 TTL은 5312초입니다."), True),
    ("sw-sqlite-table-typo", lookup("Kuna wateja wangapi katika jedwali wateja_2026?",
        "sqlite3 crm.db 'select count(*) from wateja_206'", "sqlite3 crm.db 'select count(*) from wateja_2026'",
        "Error: in prepare, no such table: wateja_206", "4127",
        "Jedwali wateja_2026 lina wateja 4127."), True),
    ("is-docker-inspect-typo", lookup("Hvaða útgáfa af myndinni keyrir í gámnum greidslur-api?",
        "docker inspect greidslur-apl --format '{{.Config.Image}}'",
        "docker inspect greidslur-api --format '{{.Config.Image}}'",
        "Error: No such object: greidslur-apl", "registry.example/greidslur:5.2.0",
        "Gámurinn greidslur-api keyrir registry.example/greidslur:5.2.0."), True),
    # refused: the answer names the wrong value only the failed call had, or speaks of the first attempt
    ("en-names-the-typo", lookup("Which image does deploy/api run in namespace shop?",
        "kubectl get deploy api -n shpo -o name", "kubectl get deploy api -n shop -o name",
        'Error from server (NotFound): namespaces "shpo" not found', "deployment.apps/api",
        "After shpo did not exist, I used shop: deployment.apps/api is there."), False),
    ("de-names-the-typo", lookup("Auf welchen Commit zeigt das Tag v3.8.1?",
        "git rev-list -n 1 v3.81", "git rev-list -n 1 v3.8.1",
        "fatal: ambiguous argument 'v3.81': unknown revision or path not in the working tree.", "9c41e07d2b",
        "Nach dem Fehler mit v3.81 habe ich v3.8.1 gelesen: 9c41e07d2b."), False),
    ("sw-names-the-typo", lookup("Kuna wateja wangapi katika jedwali wateja_2026?",
        "sqlite3 crm.db 'select count(*) from wateja_206'", "sqlite3 crm.db 'select count(*) from wateja_2026'",
        "Error: in prepare, no such table: wateja_206", "4127",
        "Baada ya wateja_206 kukosekana, wateja_2026 lina wateja 4127."), False),
    ("fr-first-attempt-clause", lookup("Combien de factures dans la table factures_2026 ?",
        "psql -d compta -c 'select count(*) from facture_2026'",
        "psql -d compta -c 'select count(*) from factures_2026'",
        'ERROR:  relation "facture_2026" does not exist', " count \n-------\n  1184\n(1 row)",
        "Comme la première tentative n'avait pas abouti, j'ai recompté : factures_2026 contient 1184 factures."),
     False),
]


@pytest.mark.parametrize(("case", "original", "safe"), RETRY_ONLY, ids=[row[0] for row in RETRY_ONLY])
def test_a_sentence_about_the_retry_only_is_no_reference(case: str, original: Trajectory, safe: bool,
                                                         detectors: Detectors) -> None:
    edited, message_map = without_first_call(original)
    results = {v.name: v for v in validate_edit(original, edited, message_map, ["c1"], detectors)}
    assert results["no-reference-to-deleted-failure"].passed is safe, (case, results["no-reference-to-deleted-failure"].findings)
    result = offline_edit(original, issue(1), detectors=detectors)
    if safe:
        assert result.status == "edited", (case, result.reason)
        assert result.edited is not None and result.edited is not original
        assert original.messages[-1].content in (result.edited.messages[-1].content or "")
    else:
        # the reference is cut (a clause of a longer answer) or the deletion refused: never kept silently
        kept = result.edited is not None and result.status == "edited" and any(
            original.messages[-1].content == (m.content or "") for m in result.edited.messages)
        assert not kept, (case, result.reason)


# --- a read-only lookup that found nothing and was run again corrected is a failed call to delete -----------------

EMPTY_READS: list[tuple[str, Trajectory, bool]] = [
    ("es-docker-exec-redis-scard", chat("¿Cuántos usuarios activos hay en el set users:active:mx?", [
        ("docker exec cache-1 redis-cli -n 3 SCARD users:activ:mx", "(integer) 0", 0),
        ("docker exec cache-1 redis-cli -n 3 SCARD users:active:mx", "(integer) 2210", 0),
        "El set users:active:mx tiene 2210 usuarios."]), True),
    ("en-squeue-job-id-swap", chat("What state is job 5521907 in?", [
        ("squeue -j 5521097 -h -o '%i %T'", "", 0),
        ("squeue -j 5521907 -h -o '%i %T'", "5521907 RUNNING", 0),
        "Job 5521907 is RUNNING."]), True),
    ("ja-kubectl-exec-redis-get", chat("feature:dark_mode のフラグ値は？", [
        ("kubectl exec -n web redis-0 -- redis-cli GET feature:darkmode", "(nil)", 0),
        ("kubectl exec -n web redis-0 -- redis-cli GET feature:dark_mode", '"on"', 0),
        "feature:dark_mode は \"on\" です。"]), True),
    ("is-redis-hlen", chat("Hversu mörg svið eru í hash-inu pantanir:2026?", [
        ("redis-cli -h cache.internal -p 6380 HLEN pantanir:2062", "(integer) 0", 0),
        ("redis-cli -h cache.internal -p 6380 HLEN pantanir:2026", "(integer) 58", 0),
        "Hash-ið pantanir:2026 hefur 58 svið."]), True),
    # not a correction: another question; and a write that found nothing is no read
    ("en-widened-question", chat("How many sessions does user u_81 have?", [
        ("redis-cli -n 1 SCARD sessions:u_81", "(integer) 0", 0),
        ("redis-cli -n 1 DBSIZE", "(integer) 5210", 0),
        "User u_81 has no sessions."]), False),
    ("de-write-found-nothing", chat("Lösche den Schlüssel tmp:export:17.", [
        ("redis-cli -n 2 DEL tmp:export:71", "(integer) 0", 0),
        ("redis-cli -n 2 DEL tmp:export:17", "(integer) 1", 0),
        "tmp:export:17 ist gelöscht."]), False),
]


@pytest.mark.parametrize(("case", "original", "deleted"), EMPTY_READS, ids=[row[0] for row in EMPTY_READS])
def test_an_empty_read_run_again_corrected_is_deletable(case: str, original: Trajectory, deleted: bool,
                                                        detectors: Detectors) -> None:
    before = original.model_dump_json()
    result = offline_edit(original, issue(1), detectors=detectors)
    assert (result.status == "edited") is deleted, (case, result.reason)
    assert original.model_dump_json() == before  # the result is a deep copy: the input is untouched
    if deleted:
        assert result.removed_calls == ["c1"]


# --- a rewrite dropping the failure's receipt values while keeping the object's is a flip --------------------------

FLIPS: list[tuple[str, Trajectory, str, bool]] = [
    ("sw-gradle-missing-class", chat("Jenga bundle ya Android 7.2.0.", [
        ("./gradlew :app:bundleRelease", "> Task :app:minifyReleaseWithR8 FAILED\n"
         "ERROR: Missing class com.example.ledger.SyncBridge\nBUILD FAILED in 2m 11s", 1),
        "Ujenzi haukufaulu: darasa com.example.ledger.SyncBridge halipo. Hakuna bundle."]),
     "Bundle ya 7.2.0 iko tayari: app/build/outputs/bundle/release/app-release.aab.", True),
    ("is-terraform-apply", chat("Keyrðu terraform apply fyrir netið vpc-main.", [
        ("terraform -chdir=infra apply -auto-approve", "aws_subnet.b: Creating...\n"
         "Error: creating EC2 Subnet: InvalidSubnet.Conflict: The CIDR '10.4.2.0/24' conflicts with another subnet", 1),
        "Ekki tókst: InvalidSubnet.Conflict á 10.4.2.0/24. Netið vpc-main er óbreytt."]),
     "Netið vpc-main er uppfært í infra.", True),
    ("en-npm-publish", chat("Publish @acme/ui 4.1.0.", [
        ("npm publish --access public", "npm ERR! code E403\nnpm ERR! 403 Forbidden - PUT "
         "https://registry.npmjs.org/@acme%2fui - You cannot publish over the previously published versions: 4.1.0.", 1),
        "Publishing failed with E403: 4.1.0 already exists on the registry."]),
     "@acme/ui 4.1.0 is now on the registry.", True),
    ("ko-docker-push", chat("이미지 shop/web:1.9 를 푸시해 주세요.", [
        ("docker push registry.example/shop/web:1.9", "The push refers to repository [registry.example/shop/web]\n"
         "denied: requested access to the resource is denied", 1),
        "푸시 실패: denied (registry.example/shop/web). 권한이 필요합니다."]),
     "registry.example/shop/web:1.9 푸시 완료.", True),
    ("sw-mvn-keeps-object", chat("Jenga kifurushi cha malipo 3.4.0.", [
        ("mvn -q -pl payments package", "[ERROR] Failed to execute goal on project payments: Could not resolve "
         "dependencies: com.acme:ledger-core:jar:2.9.1 was not found\n[ERROR] BUILD FAILURE", 1),
        "Ujenzi wa payments haukufaulu: com.acme:ledger-core:jar:2.9.1 haipatikani."]),
     "Kifurushi cha payments 3.4.0 kiko tayari: payments/target/payments-3.4.0.jar.", True),
    # kept: the rewrite still names the failure's values
    ("sw-mvn-keeps-dependency", chat("Jenga kifurushi cha malipo 3.4.0.", [
        ("mvn -q -pl payments package", "[ERROR] Failed to execute goal on project payments: Could not resolve "
         "dependencies: com.acme:ledger-core:jar:2.9.1 was not found\n[ERROR] BUILD FAILURE", 1),
        "Ujenzi wa payments haukufaulu: com.acme:ledger-core:jar:2.9.1 haipatikani."]),
     "payments haikujengwa: com.acme:ledger-core:jar:2.9.1 haipo kwenye hazina.", False),
    ("sw-gradle-keeps-class", chat("Jenga bundle ya Android 7.2.0.", [
        ("./gradlew :app:bundleRelease", "> Task :app:minifyReleaseWithR8 FAILED\n"
         "ERROR: Missing class com.example.ledger.SyncBridge\nBUILD FAILED in 2m 11s", 1),
        "Ujenzi haukufaulu: darasa com.example.ledger.SyncBridge halipo. Hakuna bundle."]),
     "Bundle haikujengwa (BUILD FAILED): com.example.ledger.SyncBridge haipatikani.", False),
    ("is-terraform-keeps-code", chat("Keyrðu terraform apply fyrir netið vpc-main.", [
        ("terraform -chdir=infra apply -auto-approve", "aws_subnet.b: Creating...\n"
         "Error: creating EC2 Subnet: InvalidSubnet.Conflict: The CIDR '10.4.2.0/24' conflicts with another subnet", 1),
        "Ekki tókst: InvalidSubnet.Conflict á 10.4.2.0/24. Netið vpc-main er óbreytt."]),
     "InvalidSubnet.Conflict: 10.4.2.0/24 skarast við annað undirnet; vpc-main er óbreytt.", False),
    ("fr-npm-keeps-code", chat("Publie @acme/ui 4.1.0.", [
        ("npm publish --access public", "npm ERR! code E403\nnpm ERR! 403 Forbidden - PUT "
         "https://registry.npmjs.org/@acme%2fui - You cannot publish over the previously published versions: 4.1.0.", 1),
        "La publication a échoué (E403) : 4.1.0 existe déjà."]),
     "Refusé par le registre (E403) : la version 4.1.0 y est déjà.", False),
]


@pytest.mark.parametrize(("case", "original", "rewrite", "flip"), FLIPS, ids=[row[0] for row in FLIPS])
def test_dropping_the_failures_values_is_a_flip(case: str, original: Trajectory, rewrite: str, flip: bool,
                                               detectors: Detectors) -> None:
    edited = final_rewritten(original, rewrite)
    results = {v.name: v for v in validate_edit(original, edited, list(range(len(original.messages))), [], detectors)}
    claims = results["new-claims-supported"]
    assert (not claims.passed and claims.kind == "flip") is flip, (case, claims.findings)


# --- a payout or parcel on its way is a going state --------------------------------------------------------------

GOING: list[tuple[str, Trajectory, str, bool]] = [
    ("en-payout-in-transit", chat("Has transfer tr_88Qa arrived?", [
        ("curl -s https://api.pay.example/v1/transfers/tr_88Qa", '{"id": "tr_88Qa", "status": "in_transit"}', 0),
        "Not yet: tr_88Qa is in_transit."]), "tr_88Qa will arrive any minute now.", True),
    ("de-parcel-out-for-delivery", chat("Ist Paket 00340434161094042557 zugestellt?", [
        ("curl -s https://track.example/v2/parcels/00340434161094042557",
         '{"parcel": "00340434161094042557", "state": "out_for_delivery"}', 0),
        "Noch nicht: out_for_delivery."]), "Das Paket wird gleich zugestellt sein.", True),
    ("pt-payout-keeps-state", chat("O repasse po_77Xz já caiu?", [
        ("curl -s https://api.pay.example/v1/payouts/po_77Xz", '{"id": "po_77Xz", "status": "in_transit"}', 0),
        "Ainda não: po_77Xz está in_transit."]), "po_77Xz continua in_transit; ainda não caiu na conta.", False),
    ("ru-parcel-keeps-state", chat("Доставлена ли посылка RX-5520?", [
        ("curl -s https://track.example/v2/parcels/RX-5520", '{"parcel": "RX-5520", "state": "en_route"}', 0),
        "Ещё нет: RX-5520 в статусе en_route."]), "Посылка RX-5520 пока en_route.", False),
]


@pytest.mark.parametrize(("case", "original", "rewrite", "future"), GOING, ids=[row[0] for row in GOING])
def test_a_payout_on_its_way_is_going(case: str, original: Trajectory, rewrite: str, future: bool,
                                      detectors: Detectors) -> None:
    edited = final_rewritten(original, rewrite)
    results = {v.name: v for v in validate_edit(original, edited, list(range(len(original.messages))), [], detectors)}
    claims = results["new-claims-supported"]
    assert (not claims.passed and claims.kind == "future-claim") is future, (case, claims.findings)
