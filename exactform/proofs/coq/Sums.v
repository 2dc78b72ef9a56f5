(** Facts about the finite sums [rsum] and maxima [vmax] of Defs.v. *)
From Coq Require Import Reals Lra Lia Bool Arith.
From Exactform Require Import Defs.
Open Scope R_scope.

Lemma rsum_ext : forall n f g, (forall i, (i < n)%nat -> f i = g i) -> rsum n f = rsum n g.
Proof.
  induction n; intros f g H; simpl; auto.
  rewrite (IHn f g) by (intros; apply H; lia). rewrite (H n) by lia. reflexivity.
Qed.

Lemma rsum_scal : forall n c f, rsum n (fun i => c * f i) = c * rsum n f.
Proof. induction n; intros; simpl; [ring | rewrite IHn; ring]. Qed.

Lemma rsum_scal_r : forall n c f, rsum n (fun i => f i * c) = rsum n f * c.
Proof. induction n; intros; simpl; [ring | rewrite IHn; ring]. Qed.

Lemma rsum_plus : forall n f g, rsum n (fun i => f i + g i) = rsum n f + rsum n g.
Proof. induction n; intros; simpl; [ring | rewrite IHn; ring]. Qed.

Lemma rsum_minus : forall n f g, rsum n (fun i => f i - g i) = rsum n f - rsum n g.
Proof. induction n; intros; simpl; [ring | rewrite IHn; ring]. Qed.

Lemma rsum_zero : forall n, rsum n (fun _ => 0) = 0.
Proof. induction n; simpl; [ | rewrite IHn]; ring. Qed.

Lemma rsum_const : forall n c, rsum n (fun _ => c) = INR n * c.
Proof. induction n; intros; simpl rsum; [simpl; ring | rewrite IHn, S_INR; ring]. Qed.

Lemma rsum_le : forall n f g, (forall i, (i < n)%nat -> f i <= g i) -> rsum n f <= rsum n g.
Proof.
  induction n; intros f g H; simpl; [lra | ].
  pose proof (IHn f g (fun i Hi => H i ltac:(lia))). pose proof (H n ltac:(lia)). lra.
Qed.

Lemma rsum_nonneg : forall n f, (forall i, (i < n)%nat -> 0 <= f i) -> 0 <= rsum n f.
Proof. intros. rewrite <- (rsum_zero n). apply rsum_le. auto. Qed.

Lemma rsum_term_le : forall n f j, (forall i, (i < n)%nat -> 0 <= f i) -> (j < n)%nat -> f j <= rsum n f.
Proof.
  induction n; intros f j H Hj; [lia | simpl].
  destruct (Nat.eq_dec j n) as [->|Hne].
  - pose proof (rsum_nonneg n f (fun i Hi => H i ltac:(lia))). lra.
  - pose proof (IHn f j (fun i Hi => H i ltac:(lia)) ltac:(lia)). pose proof (H n ltac:(lia)). lra.
Qed.

Lemma rsum_pos : forall n f j, (forall i, (i < n)%nat -> 0 <= f i) -> (j < n)%nat -> 0 < f j -> 0 < rsum n f.
Proof. intros. pose proof (rsum_term_le n f j H H0). lra. Qed.

(** Maxima. *)

Lemma rmax_ge : forall n f j, (j <= n)%nat -> f j <= rmax n f.
Proof.
  induction n; intros f j Hj; simpl.
  - replace j with O by lia. lra.
  - destruct (Nat.eq_dec j (S n)) as [->|Hne]; [apply Rmax_r | ].
    eapply Rle_trans; [apply IHn; lia | apply Rmax_l].
Qed.

Lemma rmax_attained : forall n f, exists j, (j <= n)%nat /\ f j = rmax n f.
Proof.
  induction n; intros f; simpl; [exists O; split; auto | ].
  destruct (IHn f) as [j [Hj Hf]]. unfold Rmax. destruct (Rle_dec (rmax n f) (f (S n))).
  - exists (S n); split; auto.
  - exists j; split; auto.
Qed.

Lemma vmax_ge : forall T f j, (j < T)%nat -> f j <= vmax T f.
Proof. intros [|n] f j Hj; [lia | apply rmax_ge; lia]. Qed.

Lemma vmax_attained : forall T f, (1 <= T)%nat -> exists j, (j < T)%nat /\ f j = vmax T f.
Proof.
  intros [|n] f HT; [lia | ]. destruct (rmax_attained n f) as [j [Hj Hf]].
  exists j; split; [lia | exact Hf].
Qed.

Lemma vmax_le : forall T f c, (1 <= T)%nat -> (forall j, (j < T)%nat -> f j <= c) -> vmax T f <= c.
Proof.
  intros. destruct (vmax_attained T f H) as [j [Hj <-]]. auto.
Qed.

Lemma vmax_ext : forall T f g, (forall j, (j < T)%nat -> f j = g j) -> vmax T f = vmax T g.
Proof.
  intros [|n] f g H; simpl; auto.
  assert (forall m, (m <= n)%nat -> rmax m f = rmax m g).
  { induction m; intros Hm; simpl; [apply H; lia | rewrite IHm by lia; rewrite H by lia; auto]. }
  apply H0; lia.
Qed.

(** A monotone affine map commutes with the maximum. *)
Lemma vmax_affine : forall T f a b, (1 <= T)%nat -> 0 < a ->
  vmax T (fun j => a * f j + b) = a * vmax T f + b.
Proof.
  intros T f a b HT Ha. apply Rle_antisym.
  - apply vmax_le; auto. intros j Hj. pose proof (vmax_ge T f j Hj).
    apply Rplus_le_compat_r, Rmult_le_compat_l; lra.
  - destruct (vmax_attained T f HT) as [j [Hj Hf]]. rewrite <- Hf.
    apply (vmax_ge T (fun j => a * f j + b) j Hj).
Qed.

(** A probability vector averages to at most the maximum. *)
Lemma average_le_vmax : forall T p f, (forall j, (j < T)%nat -> 0 <= p j) -> rsum T p = 1 ->
  rsum T (fun j => p j * f j) <= vmax T f.
Proof.
  intros. apply Rle_trans with (rsum T (fun j => p j * vmax T f)).
  - apply rsum_le. intros. apply Rmult_le_compat_l; auto. apply vmax_ge; auto.
  - rewrite rsum_scal_r, H0. lra.
Qed.

(** The maximum is 1-Lipschitz in the ∞-norm. *)
Lemma vmax_lipschitz : forall T f g, (1 <= T)%nat ->
  Rabs (vmax T f - vmax T g) <= vmax T (fun j => Rabs (f j - g j)).
Proof.
  intros T f g HT. set (E := vmax T (fun j => Rabs (f j - g j))).
  assert (Hd : forall j, (j < T)%nat -> Rabs (f j - g j) <= E) by (intros; apply (vmax_ge _ (fun j => Rabs (f j - g j))); auto).
  assert (vmax T f <= vmax T g + E).
  { apply vmax_le; auto. intros j Hj. pose proof (Hd j Hj). pose proof (vmax_ge T g j Hj).
    pose proof (Rle_abs (f j - g j)). lra. }
  assert (vmax T g <= vmax T f + E).
  { apply vmax_le; auto. intros j Hj. pose proof (Hd j Hj). pose proof (vmax_ge T f j Hj).
    rewrite Rabs_minus_sym in H0. pose proof (Rle_abs (g j - f j)). lra. }
  apply Rabs_le. lra.
Qed.

(** Sums over index ranges. *)

Lemma rsum_split : forall a b f, rsum (a + b) f = rsum a f + rsum b (fun i => f (a + i)%nat).
Proof.
  intros a b f. induction b; simpl; [rewrite Nat.add_0_r; ring | ].
  rewrite Nat.add_succ_r. simpl. rewrite IHb. ring.
Qed.

Lemma rsum_single : forall n k f,
  rsum n (fun c => if (c =? k)%nat then f c else 0) = if (k <? n)%nat then f k else 0.
Proof.
  induction n; intros k f; simpl; [destruct k; reflexivity | ].
  rewrite IHn. destruct (Nat.ltb_spec k n), (Nat.eqb_spec n k), (Nat.ltb_spec k (S n)); subst; try lia; ring.
Qed.

Lemma rsum_zero_ext : forall n f, (forall i, (i < n)%nat -> f i = 0) -> rsum n f = 0.
Proof. intros. rewrite (rsum_ext n f (fun _ => 0)) by auto. apply rsum_zero. Qed.

(** A function that is f(c − a) on [a, a + n) and 0 elsewhere sums to Σ_{i<n} f i. *)
Lemma rsum_window : forall a n w f, (a + n <= w)%nat ->
  rsum w (fun c => if ((a <=? c) && (c <? a + n))%nat then f (c - a)%nat else 0) = rsum n f.
Proof.
  intros a n w f H. replace w with (a + (n + (w - a - n)))%nat by lia.
  rewrite !rsum_split. rewrite rsum_zero_ext.
  2:{ intros i Hi. destruct (Nat.leb_spec a i); [lia | reflexivity]. }
  rewrite (rsum_zero_ext (w - a - n)).
  2:{ intros i Hi. destruct (Nat.ltb_spec (a + (n + i)) (a + n)); [lia | ]. rewrite andb_false_r. reflexivity. }
  rewrite (rsum_ext n _ f). ring.
  intros i Hi. destruct (Nat.leb_spec a (a + i)), (Nat.ltb_spec (a + i) (a + n)); try lia. simpl. f_equal. lia.
Qed.

Lemma rsum_mul : forall a b f, rsum (a * b) f = rsum a (fun i => rsum b (fun j => f (i * b + j)%nat)).
Proof.
  induction a; intros b f; simpl; [reflexivity | ].
  replace (b + a * b)%nat with (a * b + b)%nat by lia. rewrite rsum_split, IHa. reflexivity.
Qed.

Lemma rsum_pairs : forall m f, rsum (2 * m) f = rsum m (fun p => f (2 * p)%nat + f (2 * p + 1)%nat).
Proof.
  induction m; intros f; [reflexivity | ].
  replace (2 * S m)%nat with (S (S (2 * m))) by lia. cbn [rsum]. rewrite IHm.
  replace (2 * m + 1)%nat with (S (2 * m)) by lia. ring.
Qed.
