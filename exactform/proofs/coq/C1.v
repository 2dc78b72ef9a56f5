(** Claim C1 (docs/spec.md §3) for every number of tokens T ≥ 1: a hardmax head whose scores
    are α·v_j + β with α > 0 returns max_j v_j, ties included. *)
From Coq Require Import Reals Lra Lia.
From Exactform Require Import Defs Sums.
Open Scope R_scope.

(** The argmax set of the scores is the argmax set of the values. *)
Lemma argmax_affine : forall T v a b j, (1 <= T)%nat -> 0 < a ->
  (a * v j + b = vmax T (fun k => a * v k + b) <-> v j = vmax T v).
Proof.
  intros. rewrite vmax_affine by auto. split; intro E.
  - apply Rmult_eq_reg_l with a; lra.
  - rewrite E; reflexivity.
Qed.

(** The hardmax weights of any scores that reach their maximum at the same tokens as v average
    v to its maximum. *)
Lemma hardmax_average : forall T s v, (1 <= T)%nat ->
  (forall j, (j < T)%nat -> (s j = vmax T s <-> v j = vmax T v)) ->
  rsum T (fun j => hardmax T s j * v j) = vmax T v.
Proof.
  intros T s v HT Hs. unfold hardmax. cbv zeta.
  set (m := vmax T s). set (I := fun j => if Req_EM_T (s j) m then 1 else 0).
  assert (HI : forall j, (j < T)%nat -> 0 <= I j) by (intros; unfold I; destruct Req_EM_T; lra).
  assert (Hcnt : 0 < rsum T I).
  { destruct (vmax_attained T s HT) as [j [Hj Hf]]. apply (rsum_pos T I j HI Hj).
    unfold I. destruct Req_EM_T; [lra | contradiction]. }
  transitivity (rsum T (fun j => / rsum T I * (I j * vmax T v))).
  - apply rsum_ext. intros j Hj. unfold I. fold m. destruct Req_EM_T as [E|E].
    + assert (v j = vmax T v) by (apply Hs; auto). rewrite H. ring.
    + ring.
  - rewrite rsum_scal, rsum_scal_r. field. lra.
Qed.

Theorem C1_hardmax_returns_max : forall (T : nat) (v : nat -> R) (alpha beta : R),
  (1 <= T)%nat -> 0 < alpha ->
  rsum T (fun j => hardmax T (fun k => alpha * v k + beta) j * v j) = vmax T v.
Proof.
  intros. apply hardmax_average; auto. intros. apply argmax_affine; auto.
Qed.
